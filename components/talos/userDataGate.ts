// The gate on the generated machine configs: no user-data machine is created until every one of
// them is known to fit its platform's limit. Apart from userData.ts, which validation uses offline.
import * as pulumi from "@pulumi/pulumi";
import type { NodeSpec } from "../spec/types";
import { base64Length, hasUserDataLimit, userDataProblem } from "./userData";

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
