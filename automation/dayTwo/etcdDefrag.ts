// `etcd defrag <env>`: gives the free space in each etcd member's database back (Talos' etcd
// maintenance guide: the database file only grows; compaction frees pages inside it, a
// defragmentation rewrites the file without them). A member blocks reads and writes while it
// defragments, so it goes one member at a time, the leader last, each only while etcd keeps its
// quorum without that member and after the cluster was healthy again. Refused on an unhealthy cluster.
import type { CliContext } from "../context";
import { ExitCode, type ExitCodeValue, UserError } from "../errors";
import { controlPlanes } from "./cluster";
import { healthGate, quorumGate } from "./gates";
import { formatBytes, memberStatuses } from "./health";
import { runDayTwo } from "./run";

/** `etcd defrag` as asked. */
interface DefragCommand {
  readonly env: string;
  readonly healthTimeoutMs: number;
  readonly installCli: boolean;
}

/** Runs `etcd defrag`: 0 when every member was defragmented, 3 refused before any, 1 stopped at one. */
export async function etcdDefrag(ctx: CliContext, request: DefragCommand): Promise<ExitCodeValue> {
  const target = `etcd defrag ${request.env}`;
  return runDayTwo(
    ctx,
    { command: "etcd defrag", env: request.env, installCli: request.installCli },
    async ({ client, cluster, out, stopReason }) => {
      const healthy = await healthGate(client, cluster, request.healthTimeoutMs);
      if (!healthy.ok) {
        throw new UserError(
          {
            what: target,
            problem:
              "refused: the cluster is not healthy, and a member that defragments blocks its reads and writes",
            got: JSON.stringify(healthy.reason),
            fix: `Fix the cluster first (npm run platform -- health ${request.env}), then rerun`,
          },
          ExitCode.refused,
        );
      }
      const before = await memberStatuses(client, cluster);
      const unread = before.filter((m) => !m.ok);
      if (unread.length > 0) {
        throw new UserError(
          {
            what: target,
            problem: "refused: not every control plane's etcd member answers",
            got: unread.map((m) => `${m.node}: ${"error" in m ? m.error : ""}`).join("; "),
            fix: `Fix the cluster first (npm run platform -- health ${request.env}), then rerun`,
          },
          ExitCode.refused,
        );
      }
      // The leader last: its defragmentation would otherwise stall the cluster's writes first.
      const first = before[0];
      const leaderId = first?.ok ? first.leaderId : "";
      const cps = controlPlanes(cluster);
      const isLeader = (name: string) =>
        before.some((m) => m.ok && m.node === name && m.memberId === leaderId);
      const order = [
        ...cps.filter((cp) => !isLeader(cp.name)),
        ...cps.filter((cp) => isLeader(cp.name)),
      ];
      out(`${target}: ${order.map((cp) => cp.name).join(", ")}, one at a time`);
      const stop = (node: string, step: string, reason: string): never => {
        throw new UserError(
          {
            what: `${target} ${node}`,
            problem: `stopped at ${step}`,
            got: JSON.stringify(reason),
            fix: "Fix the cause, then rerun (a member already defragmented is only rewritten again)",
          },
          ExitCode.failed,
        );
      };
      for (const cp of order) {
        const why = stopReason();
        if (why !== undefined) stop(cp.name, "the next member", why);
        const quorum = await quorumGate(client, cluster, cp);
        if (!quorum.ok) stop(cp.name, "the quorum gate", quorum.reason);
        const was = before.find((m) => m.node === cp.name);
        try {
          await client.etcdDefrag(cp.address);
        } catch (error) {
          stop(cp.name, "talosctl etcd defrag", (error as Error).message);
        }
        const now = await client.etcdStatus(cp.address).catch(() => undefined);
        out(
          `  ${cp.name}: defragmented${was?.ok && now ? `, db ${formatBytes(was.dbSizeBytes)} → ${formatBytes(now.dbSizeBytes)}` : ""}`,
        );
        const after = await healthGate(client, cluster, request.healthTimeoutMs);
        if (!after.ok) stop(cp.name, "the health gate after it", after.reason);
      }
      ctx.stderr.write(`${target}: done; ${order.length} members defragmented, cluster healthy\n`);
      return ExitCode.ok;
    },
  );
}
