// An OpenStack instance keeps its flavor: the provider would change one with Nova's resize, which
// shuts the server down (and may move it to another host), on every node of a run at once. A new
// flavor reaches a node through its replacement, one node at a time, which this warning explains.
import type { OpenstackNodeSpec } from "../../spec/types";

/**
 * The warning for a node whose instance runs another flavor than the stack file asks for (the
 * instance's `flavorName` in the state, which the ignored change leaves as it was), or undefined.
 */
export function flavorChangeWarning(
  node: OpenstackNodeSpec,
  running: string | undefined,
  instanceUrn: string,
): string | undefined {
  const wanted = node.openstack.flavor;
  if (running === undefined || running === "" || running === wanted) return undefined;
  const unprotect =
    node.role === "controlplane" ? `pulumi state unprotect '${instanceUrn}', then ` : "";
  return (
    `${node.key}.openstack.flavor: ${node.name} keeps running ${running}; up never resizes an ` +
    `instance in place (Nova's resize shuts it down, on every node at once); got ${wanted}. ` +
    `Replace the instance, one node at a time: ${unprotect}pulumi up --target-replace ` +
    `'${instanceUrn}' (it boots from its own volumes again; docs/platforms.md, "OpenStack instances")`
  );
}
