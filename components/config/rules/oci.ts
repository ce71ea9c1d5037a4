// OCI nodes among OCI's own limits: a VNIC in at most five network security groups (the cluster's
// managed ones included), and every node's shape of the one architecture the cluster's OCI image is
// built for.
import { DEFAULT_OCI_SHAPE, ociArchitecture, shapeArchitecture } from "../derived";
import type { Rule } from "./rule";

/** OCI adds a VNIC to at most this many network security groups. */
export const OCI_MAX_NSGS_PER_VNIC = 5;

/**
 * Each OCI node's VNIC is in at most five NSGs: those it lists (or `oci.nsgIds`) and, with
 * `oci.manageNsgs`, the cluster's nodes NSG (and control planes' NSG).
 */
export const ociNsgLimit: Rule = ({ nodes, oci }, problems) => {
  if (!oci) return;
  const managed = oci.manageNsgs ?? true;
  const overDefault: string[] = [];
  let defaultCount = 0;
  for (const { index, node } of nodes) {
    if (node.platform !== "oci") continue;
    const own = node.oci?.nsgIds;
    const listed = (own ?? oci.nsgIds ?? []).length;
    const ours = managed ? (node.role === "controlplane" ? 2 : 1) : 0;
    const count = listed + ours;
    if (count <= OCI_MAX_NSGS_PER_VNIC) continue;
    if (own) {
      problems.add(
        ["nodes", index, "oci", "nsgIds"],
        `${node.name}'s VNIC would be in ${count} network security groups (${listed} listed` +
          `${ours > 0 ? ` and the cluster's ${ours}` : ""}), over OCI's limit of ${OCI_MAX_NSGS_PER_VNIC}`,
        {
          hint: `List at most ${OCI_MAX_NSGS_PER_VNIC - ours}${managed ? ", or set oci.manageNsgs: false" : ""}`,
        },
      );
    } else {
      overDefault.push(node.name);
      defaultCount = Math.max(defaultCount, count);
    }
  }
  if (overDefault.length > 0) {
    const listed = (oci.nsgIds ?? []).length;
    problems.add(
      ["oci", "nsgIds"],
      `the VNICs of ${overDefault.join(", ")} would be in up to ${defaultCount} network security groups ` +
        `(${listed} listed and the cluster's managed ones), over OCI's limit of ${OCI_MAX_NSGS_PER_VNIC}`,
      {
        hint: `List at most ${OCI_MAX_NSGS_PER_VNIC - (defaultCount - listed)}, or set oci.manageNsgs: false`,
      },
    );
  }
};

/**
 * Every OCI node boots the cluster's one OCI image, of `oci.architecture`: a node's shape of the other
 * architecture could never boot it.
 */
export const ociShapeArchitecture: Rule = ({ nodes, oci }, problems) => {
  if (!oci) return;
  const architecture = ociArchitecture(oci);
  for (const { index, node } of nodes) {
    const shape = node.platform === "oci" ? node.oci?.shape : undefined;
    if (!shape || shapeArchitecture(shape) === architecture) continue;
    problems.add(
      ["nodes", index, "oci", "shape"],
      `${shape} is an ${shapeArchitecture(shape)} shape, and the cluster's OCI image is ${architecture} (oci.architecture)`,
      {
        got: shape,
        hint: `Use an ${architecture} shape (${architecture === "arm64" ? "Ampere A1 or A2" : "not Ampere"}): every OCI node boots the one image`,
      },
    );
  }
  // The default shape, when a node takes it, against an architecture given explicitly.
  const shape = oci.shape ?? DEFAULT_OCI_SHAPE;
  if (
    oci.architecture &&
    shapeArchitecture(shape) !== oci.architecture &&
    nodes.some(({ node }) => node.platform === "oci" && !node.oci?.shape)
  ) {
    problems.add(
      oci.shape ? ["oci", "shape"] : ["oci", "architecture"],
      `${shape} is an ${shapeArchitecture(shape)} shape, and the cluster's OCI image is ${oci.architecture} (oci.architecture)`,
      { hint: `Set oci.shape to an ${oci.architecture} shape` },
    );
  }
};
