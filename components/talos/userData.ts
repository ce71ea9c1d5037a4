// How big a machine config may be where a platform delivers it as user data, and the checks that keep
// an oversized one from reaching a machine.
import * as pulumi from "@pulumi/pulumi";
import type { CloudNodeSpecs, NodeSpec } from "../config/types";

/** Each user-data platform's limit, in bytes after base64, and where it comes from. */
export const USER_DATA_LIMITS: Readonly<
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
export const GENERATED_CONFIG_ALLOWANCE: Readonly<Record<"controlplane" | "worker", number>> = {
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

/**
 * Resolves once every user-data node's generated config is known to fit its platform's limit, and
 * fails (naming each node, its size and the limit) otherwise. Machines wait on it.
 */
export function checkUserDataSizes(
  nodes: readonly NodeSpec[],
  configs: readonly pulumi.Output<string>[],
  parent: pulumi.Resource,
): pulumi.Output<true> {
  const limited = nodes.flatMap((node, i) =>
    hasUserDataLimit(node) ? [{ node, config: configs[i] }] : [],
  );
  return pulumi.all(limited.map((l) => l.config)).apply((generated) => {
    const problems = generated.flatMap((config, i) => {
      const problem = userDataProblem(
        limited[i].node,
        base64Length(Buffer.byteLength(config)),
        false,
      );
      return problem ? [problem] : [];
    });
    if (problems.length > 0) {
      throw new pulumi.ResourceError(
        `machine config over a platform's user-data limit; no machine gets it:\n  - ${problems.join("\n  - ")}`,
        parent,
      );
    }
    return true as const;
  });
}
