// `replace-node <env> <node>`: takes a node out of the cluster cleanly so `up` can recreate it. A
// node that still answers (a planned replacement) is drained first (replaceNodeDrain.ts). For a
// control plane it then means its etcd member: one that answers hands etcd's leadership over and
// leaves by itself, otherwise another control plane removes it; refused when the remaining members
// would not hold quorum (then the cluster needs `etcd restore`, not a removal). The machine itself
// is recreated by the operator's stack-file change and `up`, which pushes its config; it then
// joins etcd again.
import * as path from "node:path";
import type { CliContext } from "../context";
import { ExitCode, type ExitCodeValue, UserError, errorReason } from "../errors";
import { type ClusterNode, controlPlanes } from "./cluster";
import { quorum } from "./gates";
import { type DayTwoSession, runDayTwo } from "./run";
import { type DrainOptions, drainNode, withNodeDrainer } from "./replaceNodeDrain";
import type { EtcdMember } from "./talosClient";

/** `replace-node` as asked. */
interface ReplaceNodeCommand extends DrainOptions {
  readonly env: string;
  readonly node: string;
  readonly yes: boolean;
  readonly installCli: boolean;
}

/** Runs `replace-node`. */
export async function replaceNode(
  ctx: CliContext,
  request: ReplaceNodeCommand,
): Promise<ExitCodeValue> {
  return runDayTwo(
    ctx,
    {
      command: "replace-node",
      env: request.env,
      installCli: request.installCli,
      node: request.node,
      commandLine: `replace-node ${request.env} ${request.node}`,
    },
    (session) => {
      const node = session.cluster.nodes.find((n) => n.name === request.node);
      if (!node) {
        throw new UserError({
          what: "replace-node",
          problem: `no deployed node of ${request.env} has that name`,
          got: JSON.stringify(request.node),
          fix: `Use one of: ${session.cluster.nodes.map((n) => n.name).join(", ")}`,
        });
      }
      return run(session, node, request);
    },
  );
}

/** What leaving etcd takes for a control plane that is a member. */
interface EtcdRemoval {
  readonly member: EtcdMember;
  /** The control plane that lists the members (and removes one that cannot leave). */
  readonly via: ClusterNode;
  /** How, for the operator. */
  readonly how: string;
}

async function run(
  session: DayTwoSession,
  node: ClusterNode,
  request: ReplaceNodeCommand,
): Promise<ExitCodeValue> {
  const { deps, client, cluster, out } = session;
  const what = `replace-node ${request.env} ${node.name}`;
  let reachable = true;
  try {
    await client.nodeVersion(node.address);
  } catch {
    reachable = false;
  }
  out(
    `replace-node ${request.env} ${node.name} (${node.role}, ${node.address}): ${reachable ? "the node still answers" : "the node does not answer"}`,
  );
  const etcd =
    node.role === "controlplane" ? await etcdRemoval(session, node, reachable, request) : undefined;
  const drain = reachable && request.drain;
  if (reachable && !request.drain) out("  --no-drain: its pods are not moved off it first");

  await withNodeDrainer(session, what, drain, async (drainer) => {
    const steps = [
      ...(drainer ? [`drain ${node.name} (kubectl drain: its pods move to other nodes)`] : []),
      ...(etcd ? [`remove ${drainer ? "it" : node.name} from etcd: ${etcd.how}`] : []),
    ];
    if (steps.length === 0) return;
    const question = steps.join(", then ");
    if (request.yes) out(`  ${question}: yes (--yes)`);
    else if (!(await deps.confirm(`${question[0].toUpperCase()}${question.slice(1)}?`))) {
      throw new UserError(
        { what, problem: "stopped at your answer", got: "no", fix: "Nothing was changed" },
        ExitCode.refused,
      );
    }
    if (drainer) {
      await drainNode(session, drainer, node, { what, drainTimeoutMs: request.drainTimeoutMs });
    }
    if (etcd) await removeMember(session, node, etcd, reachable, what);
  });

  const stackFile = path.basename(cluster.stack.file);
  out(
    [
      "next:",
      `  1. kubectl delete node ${node.name}   (credentials: npm run platform -- kubeconfig ${request.env})`,
      ...(reachable
        ? [
            `  2. If the machine is to be reused, wipe it: talosctl -n ${node.address} reset --graceful=false --reboot`,
          ]
        : []),
      `  ${reachable ? 3 : 2}. Edit ${stackFile} for the replacement (e.g. another proxmox.host; docs/runbooks/lost-proxmox-host.md), commit it`,
      `  ${reachable ? 4 : 3}. npm run platform -- up ${request.env}   (recreates the machine and pushes its config${node.role === "controlplane" ? "; it joins etcd by itself" : ""})`,
      `  ${reachable ? 5 : 4}. npm run platform -- preflight ${request.env}   (every node healthy${node.role === "controlplane" ? ", etcd members = control planes" : ""})`,
    ].join("\n"),
  );
  return ExitCode.ok;
}

/**
 * A control plane's etcd member and how it leaves: by itself when it answers, else removed by
 * another control plane. Refused (exit 3) for the only control plane, when no other lists the
 * members, and when the others would not keep quorum. Undefined when it is no member (any more).
 */
async function etcdRemoval(
  session: DayTwoSession,
  node: ClusterNode,
  reachable: boolean,
  request: ReplaceNodeCommand,
): Promise<EtcdRemoval | undefined> {
  const { client, cluster, out } = session;
  const refuse = (problem: string, got: string, fix: string): never => {
    throw new UserError(
      { what: `replace-node ${request.env} ${node.name}`, problem, got, fix },
      ExitCode.refused,
    );
  };
  const others = controlPlanes(cluster).filter((cp) => cp.name !== node.name);
  if (others.length === 0) {
    return refuse(
      "it is the only control plane; removing its etcd member would destroy the cluster's state",
      node.name,
      `Restore instead: npm run platform -- etcd restore ${request.env} --from <snapshot>`,
    );
  }
  let members: EtcdMember[] | undefined;
  let via: ClusterNode | undefined;
  let lastError = "";
  for (const cp of others) {
    try {
      members = await client.etcdMembers(cp.address);
      via = cp;
      break;
    } catch (error) {
      lastError = errorReason(error);
    }
  }
  if (!members || !via) {
    return refuse(
      "no other control plane lists the etcd members (etcd may have lost quorum)",
      JSON.stringify(lastError),
      `Restore instead: docs/runbooks/etcd-restore.md (npm run platform -- etcd restore ${request.env} --from <snapshot>)`,
    );
  }
  const member = members.find(
    (m) => m.hostname === node.name || m.peerUrls.some((url) => urlHost(url) === node.address),
  );
  if (!member) {
    out(`  etcd: ${node.name} is not a member (already removed); nothing to remove`);
    return undefined;
  }
  const voters = members.filter((m) => !m.learner).length;
  let healthyOthers = 0;
  const states: string[] = [];
  for (const cp of others) {
    try {
      const status = await client.service(cp.address, "etcd");
      if (status.state === "Running" && status.health === "OK") healthyOthers++;
      states.push(`${cp.name} ${status.state}/${status.health || "?"}`);
    } catch {
      states.push(`${cp.name} unreachable`);
    }
  }
  const need = quorum(voters);
  if (healthyOthers < need) {
    return refuse(
      `removing it would leave ${healthyOthers} healthy etcd member${healthyOthers === 1 ? "" : "s"} of ${voters}; quorum needs ${need}`,
      states.join(", "),
      `Bring another member back first; with quorum already lost, restore instead (docs/runbooks/etcd-restore.md). Nothing was changed`,
    );
  }
  out(
    `  etcd: member ${member.id} (${member.hostname || "unstarted"}); ${healthyOthers} other members healthy, quorum ${need}`,
  );
  // A member that still runs hands leadership over first, so its leaving is not a leader loss
  // (an election, writes stalled meanwhile): talosctl etcd forfeit-leadership.
  const how = reachable
    ? `it hands leadership over and leaves etcd itself (talosctl -n ${node.address} etcd forfeit-leadership; etcd leave)`
    : `${via.name} removes it (talosctl -n ${via.address} etcd remove-member ${member.id})`;
  return { member, via, how };
}

/** Takes the member out (forfeit-leadership and leave, or remove-member) and checks it is gone. */
async function removeMember(
  session: DayTwoSession,
  node: ClusterNode,
  etcd: EtcdRemoval,
  reachable: boolean,
  what: string,
): Promise<void> {
  const { client, out } = session;
  const { member, via } = etcd;
  const failed = (problem: string, got: string, fix: string): never => {
    throw new UserError({ what, problem, got, fix }, ExitCode.failed);
  };
  if (reachable) {
    try {
      await client.etcdForfeitLeadership(node.address);
    } catch (error) {
      failed(
        "handing etcd's leadership over failed, so it did not leave",
        JSON.stringify(errorReason(error)),
        `Check etcd (talosctl -n ${via.address} etcd members; talosctl -n ${node.address} service etcd) and rerun`,
      );
    }
  }
  try {
    if (reachable) await client.etcdLeave(node.address);
    else await client.etcdRemoveMember(via.address, member.id);
  } catch (error) {
    failed(
      "removing the etcd member failed",
      JSON.stringify(errorReason(error)),
      `Check etcd (talosctl -n ${via.address} etcd members) and rerun`,
    );
  }
  const after = await client.etcdMembers(via.address);
  if (after.some((m) => m.id === member.id)) {
    failed(
      "the member is still listed after its removal",
      member.id,
      `Check with talosctl -n ${via.address} etcd members and rerun`,
    );
  }
  out(
    `  etcd: ${node.name} ${reachable ? "handed leadership over and left" : "removed"}; ${after.length} members remain`,
  );
}

/** The host of a peer URL (`https://192.0.2.12:2380`, `https://[2001:db8::12]:2380`). */
function urlHost(url: string): string {
  try {
    return new URL(url).hostname.replace(/^\[|\]$/g, "");
  } catch {
    return "";
  }
}
