// Cloud nodes (OCI, OpenStack) carry their whole machine config as user data, which the platforms
// limit. The config is generated only once resources exist, so this estimates it from the node's
// patches; TalosCluster checks the exact size before any machine gets it. Estimated even when other
// sections have problems, so the report is complete.
import { DEPLOY_KEY_PLACEHOLDER, fluxHandoffPatch } from "../../flux/handoff";
import { machinePatches } from "../../talos/patches";
import { estimatedUserDataLength, hasUserDataLimit, userDataProblem } from "../../talos/userData";
import { completeCluster, completeNode } from "../complete";
import { normalizeCluster, normalizeNode, normalizeServices, poolIndexes } from "../normalize";
import type { Rule } from "./rule";

/** A Cinder volume id (a UUID) as long as the real one, for the data volume's selector. */
const VOLUME_ID_PLACEHOLDER = "00000000-0000-0000-0000-000000000000";
/** The installer reference of the longest form, standing in for the real one in size estimates. */
const INSTALLER_PLACEHOLDER = `factory.talos.dev/openstack-installer/${"0".repeat(64)}:v1.13.99`;

/** Each cloud node's estimated user data fits its platform's limit. */
export const userDataSize: Rule = (input, problems) => {
  const complete = completeCluster(input);
  if (!complete) return;
  const rawNodes = input.nodes.map((entry) => entry.node);
  const cluster = normalizeCluster(complete, rawNodes, input.oci, input.openstack);
  const { flux } = normalizeServices(cluster, input);
  const pools = poolIndexes(rawNodes);
  input.nodes.forEach((entry, i) => {
    if (entry.node.platform !== "oci" && entry.node.platform !== "openstack") return;
    const settled = completeNode(entry, input);
    if (!settled) return;
    const node = normalizeNode(settled, pools[i], cluster, complete.raw);
    if (!hasUserDataLimit(node)) return;
    const servicePatches =
      flux && node.role === "controlplane" ? [fluxHandoffPatch(flux, DEPLOY_KEY_PLACEHOLDER)] : [];
    const patches = machinePatches(cluster, node, INSTALLER_PLACEHOLDER, servicePatches, {
      dataVolumeId: VOLUME_ID_PLACEHOLDER,
    });
    const problem = userDataProblem(node, estimatedUserDataLength(node.role, patches), true);
    if (problem) problems.addMessage(problem);
  });
};
