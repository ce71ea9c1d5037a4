// How big a machine config may be where a platform delivers it as user data, and the checks that keep
// an oversized one from reaching a machine.
// Pure, and free of the Pulumi SDK: stack-file validation uses it offline (userDataGate.ts holds the
// check on the generated configs).
import type { CloudNodeSpecs, NodeSpec } from "../spec/types";

/** Each user-data platform's limit, in bytes after base64, and where it comes from. */
const USER_DATA_LIMITS: Readonly<
  Record<CloudNodeSpecs["platform"], { bytes: number; name: string; rule: string }>
> = {
  oci: { bytes: 32_000, name: "OCI", rule: "instance metadata, counted after base64" },
  openstack: { bytes: 65_535, name: "OpenStack", rule: "user data, counted after base64" },
};

/**
 * Generous sizes of a Talos 1.13 machine config as generated without docs or examples, before any
 * patch: the static estimate adds the patches to these. The exact size is checked again once the
 * config is generated.
 */
const GENERATED_CONFIG_ALLOWANCE: Readonly<Record<"controlplane" | "worker", number>> = {
  controlplane: 10_000,
  worker: 6_000,
};

/** The length of `bytes` bytes once base64-encoded. */
export function base64Length(bytes: number): number {
  return 4 * Math.ceil(bytes / 3);
}

/** An upper estimate of a node's user data after base64, from its patches, before anything exists. */
export function estimatedUserDataLength(
  role: "controlplane" | "worker",
  patches: readonly string[],
): number {
  const patchBytes = patches.reduce(
    (sum, patch) => sum + Buffer.byteLength(patch) + "---\n".length,
    0,
  );
  return base64Length(GENERATED_CONFIG_ALLOWANCE[role] + patchBytes);
}

const thousands = (n: number) => n.toLocaleString("en-US");

/** The problem with a node's user data of `encodedLength` bytes, or undefined when it fits. */
export function userDataProblem(
  node: CloudNodeSpecs,
  encodedLength: number,
  estimated: boolean,
): string | undefined {
  const limit = USER_DATA_LIMITS[node.platform];
  if (encodedLength <= limit.bytes) return undefined;
  const size = `${estimated ? "about " : ""}${thousands(encodedLength)} bytes`;
  return (
    `${node.key}: the machine config of ${node.name} is ${size} as user data, over ${limit.name}'s limit of ` +
    `${thousands(limit.bytes)} bytes (${limit.rule}). Shrink its patches (cluster.patches, nodes[].patches)`
  );
}

/** True for nodes whose platform takes the config as size-limited user data. */
export function hasUserDataLimit(node: NodeSpec): node is CloudNodeSpecs {
  return node.platform in USER_DATA_LIMITS;
}
