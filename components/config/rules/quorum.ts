// etcd's quorum: an odd number of control planes; no failure domain holding more of them than a
// majority can lose (1 of 3, 2 of 5) — a Proxmox host, an OCI fault domain within its availability
// domain, an OpenStack compute host named in the zone (`zone:host`), each bare-metal machine; no two
// anti-affine OpenStack control planes pinned to one host; no apply mode that reboots too many at once.
import { spread } from "../../nodes/placement";
import { compareMinor, minorOf, parseVersion } from "../../talos/versions";
import type { KeyPath } from "../problems";
import type { RawOci } from "../schema";
import type { IndexedNode, Rule } from "./rule";

/** 1, 3 or 5 control planes: etcd needs a majority, which an even count does not add to. */
export const controlPlaneCount: Rule = ({ rawNodes, raw }, problems) => {
  // A missing or malformed node list is reported by the schema already.
  if (!Array.isArray(raw.nodes)) return;
  if (rawNodes.length === 0) {
    problems.add(["nodes"], "the cluster has no nodes", {
      hint: "List 1, 3 or 5 control planes and any workers",
    });
    return;
  }
  const roles = rawNodes.map((n) => (n as { role?: unknown } | null)?.role);
  // A node with a broken role is reported on its own; counting around it would only add noise.
  if (roles.some((role) => role !== "controlplane" && role !== "worker")) return;
  const controlPlanes = roles.filter((role) => role === "controlplane").length;
  if (controlPlanes === 0) {
    problems.add(["nodes"], "a cluster needs at least one control plane", {
      got: 0,
      hint: "Use 1, 3 or 5",
    });
  } else if (controlPlanes % 2 === 0) {
    problems.add(["nodes"], "etcd needs an odd number of control planes", {
      got: controlPlanes,
      hint: "Use 1, 3 or 5",
    });
  } else if (controlPlanes > 5) {
    // More members add write latency and no useful fault tolerance; the rollouts, the quorum
    // placement and the docs are for 1, 3 or 5.
    problems.add(["nodes"], "more than 5 control planes is not supported", {
      got: controlPlanes,
      hint: "Use 1, 3 or 5 control planes, and run the rest as workers (role: worker)",
    });
  }
};

/**
 * No `up` may reboot more than one control plane, or more workers than the rollout setting allows, at
 * once: `auto` and `reboot` reboot every node whose change needs it, together.
 */
export const applyMode: Rule = ({ cluster, rawNodes }, problems) => {
  const mode = cluster?.applyMode;
  if (!mode) return;
  if (mode === "staged") {
    problems.add(
      ["cluster", "applyMode"],
      "never takes effect on a new node, which keeps a staged config in maintenance mode",
      {
        got: mode,
        hint: 'Use staged_if_needing_reboot, the default (docs/platforms.md, "Config changes without quorum loss")',
      },
    );
    return;
  }
  // Talos 1.14 answers REBOOT with Unimplemented on a configured node, and turns AUTO into
  // NO_REBOOT (its ApplyConfiguration): a push never reboots, and `reboot` fails every push.
  const talos = parseVersion(cluster.talosVersion);
  const from114 = talos !== undefined && compareMinor(minorOf(talos), "1.14") >= 0;
  if (mode === "reboot" && from114) {
    problems.add(["cluster", "applyMode"], "is a mode Talos 1.14 removed", {
      got: mode,
      hint: "Use staged_if_needing_reboot (the default) and `npm run platform -- rollout <env>`",
    });
    return;
  }
  if (mode !== "reboot" && (mode !== "auto" || from114)) return;
  const roles = rawNodes.map((n) => (n as { role?: unknown } | null)?.role);
  const controlPlanes = roles.filter((r) => r === "controlplane").length;
  const workers = roles.filter((r) => r === "worker").length;
  const maxWorkers = cluster.rollout?.maxUnavailableWorkers ?? 1;
  const why = [
    ...(controlPlanes > 1 ? [`${controlPlanes} control planes (etcd loses quorum)`] : []),
    ...(workers > maxWorkers
      ? [`${workers} workers (cluster.rollout.maxUnavailableWorkers is ${maxWorkers})`]
      : []),
  ];
  if (why.length > 0) {
    problems.add(
      ["cluster", "applyMode"],
      `reboots every node a change needs at once: here up to ${why.join(" and ")}`,
      {
        got: mode,
        hint: "Use staged_if_needing_reboot (the default) and `npm run platform -- rollout <env>`, or no_reboot",
      },
    );
  }
};

/** How many of `n` control planes one failure domain may hold without costing quorum. */
export function maxPerFailureDomain(n: number): number {
  return n - (Math.floor(n / 2) + 1);
}

/** A control plane's failure domain, when the stack file determines it. */
interface Placed {
  readonly index: number;
  /** `Proxmox host pve1`, `OCI fault domain FAULT-DOMAIN-1 of AD-1`, … */
  readonly domain: string;
  /** The key that puts it there. */
  readonly key: KeyPath;
}

/** OCI: the availability and fault domain of the `poolIndex`-th control plane, when determined. */
function ociDomain(
  { index, node }: IndexedNode,
  poolIndex: number,
  oci: RawOci | undefined,
): Placed | undefined {
  if (node.platform !== "oci") return undefined;
  const listed = oci?.availabilityDomains;
  const spreadOver = listed && spread(poolIndex, listed.length);
  const availabilityDomain =
    node.oci?.availabilityDomain ?? (spreadOver && listed![spreadOver.domainIndex]);
  const faultDomain = node.oci?.faultDomain ?? spreadOver?.faultDomain;
  // Without listed domains the spread is decided at run time from the region's domains.
  if (!availabilityDomain || !faultDomain) return undefined;
  const key: KeyPath = node.oci?.faultDomain
    ? ["nodes", index, "oci", "faultDomain"]
    : node.oci?.availabilityDomain
      ? ["nodes", index, "oci", "availabilityDomain"]
      : ["nodes", index];
  return { index, domain: `OCI fault domain ${faultDomain} of ${availabilityDomain}`, key };
}

/** Every control plane's failure domain that the stack file determines. */
function placedControlPlanes(nodes: readonly IndexedNode[], oci: RawOci | undefined): Placed[] {
  const placed: Placed[] = [];
  let ociPool = 0;
  for (const indexed of nodes) {
    const { index, node } = indexed;
    if (node.role !== "controlplane") continue;
    switch (node.platform) {
      case "proxmox":
        placed.push({
          index,
          domain: `Proxmox host ${node.proxmox.host}`,
          key: ["nodes", index, "proxmox", "host"],
        });
        break;
      case "oci": {
        const domain = ociDomain(indexed, ociPool++, oci);
        if (domain) placed.push(domain);
        break;
      }
      case "openstack": {
        // Nova's `zone:host` pins an instance to one compute host.
        const host = node.openstack?.availabilityZone?.split(":")[1];
        if (host) {
          placed.push({
            index,
            domain: `OpenStack host ${host}`,
            key: ["nodes", index, "openstack", "availabilityZone"],
          });
        }
        break;
      }
      case "baremetal":
        break;
      default: {
        const unhandled: never = node;
        throw new Error(`no failure domain rule for ${JSON.stringify(unhandled)}`);
      }
    }
  }
  return placed;
}

/** No failure domain holds more control planes than quorum allows. */
export const quorumPlacement: Rule = ({ nodes, oci, rawNodes }, problems) => {
  // A node that did not parse and may be a control plane changes the count (it is reported on its
  // own): counting without it would misjudge what a domain may hold.
  const parsed = new Set(nodes.map(({ index }) => index));
  const unparsedControlPlane = rawNodes.some(
    (n, index) => !parsed.has(index) && (n as { role?: unknown } | null)?.role !== "worker",
  );
  if (unparsedControlPlane) return;
  const count = nodes.filter(({ node }) => node.role === "controlplane").length;
  // One control plane has no quorum to keep; an even count is reported on its own.
  if (count < 3 || count % 2 === 0) return;
  const allowed = maxPerFailureDomain(count);
  const byDomain = new Map<string, Placed[]>();
  for (const placed of placedControlPlanes(nodes, oci)) {
    byDomain.set(placed.domain, [...(byDomain.get(placed.domain) ?? []), placed]);
  }
  for (const [domain, placed] of byDomain) {
    if (placed.length <= allowed) continue;
    const last = placed[placed.length - 1];
    const moved = placed.length - allowed;
    problems.add(
      last.key,
      `puts ${placed.length} of the ${count} control planes (${placed.map((p) => `nodes[${p.index}]`).join(", ")}) on ${domain}, whose loss would lose etcd quorum`,
      {
        hint: `Move ${moved === 1 ? "one" : moved} elsewhere: at most ${allowed} of ${count} may share a failure domain`,
      },
    );
  }
};

/**
 * With the control planes in a hard anti-affinity server group, Nova refuses to schedule a second
 * one on a compute host that already has one: two pinned to the same `zone:host` never come up.
 */
export const openstackAntiAffinity: Rule = ({ nodes, openstack }, problems) => {
  if (!openstack || (openstack.controlPlaneServerGroup ?? "anti-affinity") !== "anti-affinity")
    return;
  const firstOnHost = new Map<string, number>();
  for (const { index, node } of nodes) {
    if (node.role !== "controlplane" || node.platform !== "openstack") continue;
    const zone = node.openstack?.availabilityZone;
    const host = zone?.split(":")[1];
    if (!host) continue;
    const first = firstOnHost.get(host);
    if (first === undefined) {
      firstOnHost.set(host, index);
      continue;
    }
    problems.add(
      ["nodes", index, "openstack", "availabilityZone"],
      `pins a second control plane to OpenStack host ${host}, where nodes[${first}] is: anti-affinity forbids it`,
      {
        got: zone,
        hint: "Pin it to another host, or set openstack.controlPlaneServerGroup: soft-anti-affinity",
      },
    );
  }
};
