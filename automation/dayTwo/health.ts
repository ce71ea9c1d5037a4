// `health <env>`: one report of what a cluster left alone needs watched: Talos' own health check,
// etcd per member (database size, the part in use, the leader it sees, its errors) and the active
// alarms (NOSPACE: etcd refuses writes), the certificates' days left, the newest backup's age, and
// version skew (each node's Talos and kubelet against the stack file). It changes nothing. Exit 8 when
// something is unhealthy, else 7 when a certificate is under the threshold, else 0.
import type { CliContext } from "../context";
import { ExitCode, type ExitCodeValue, errorReason } from "../errors";
import { expiringCertificates, formatCertificates } from "./certificates";
import { type CertificateSurvey, certificatesJson, surveyCertificates } from "./certs";
import { type DeployedCluster, controlPlanes } from "./cluster";
import type { DayTwoDeps } from "./deps";
import { healthGate, sameVersion } from "./gates";
import { runDayTwo } from "./run";
import type { EtcdAlarm, EtcdMemberStatus, TalosClient } from "./talosClient";

/**
 * The newest off-site etcd backup of an environment, or why there is none to report; with backups
 * configured, the age past which one is overdue (twice the schedule's longest gap). The CLI plugs
 * the `etcd backups` listing in (etcdBackups.ts: newestBackupOf); without one the report says
 * "not configured".
 */
export type NewestBackup = (env: string) => Promise<
  ({ readonly at: Date; readonly where: string } | { readonly unavailable: string }) & {
    readonly overdueAfterMs?: number;
  }
>;

/** The backup's problem, if any: configured but none there, or the newest overdue. */
export function backupProblem(
  backup: Awaited<ReturnType<NewestBackup>>,
  now: number,
): string | undefined {
  if (backup.overdueAfterMs === undefined) return undefined;
  if (!("at" in backup)) return `etcd backups: ${backup.unavailable}`;
  const ageMs = now - backup.at.getTime();
  return ageMs > backup.overdueAfterMs
    ? `etcd backups: the newest (${backup.where}) is ${formatAge(ageMs)} old, more than twice the schedule (${formatAge(backup.overdueAfterMs)})`
    : undefined;
}

/** The default hook: no off-site backups are configured. */
export const noBackupsConfigured: NewestBackup = async () => ({ unavailable: "not configured" });

/** One control plane's etcd member, or why it could not be read. */
export type MemberHealth =
  | ({ readonly node: string; readonly ok: true } & EtcdMemberStatus)
  | { readonly node: string; readonly ok: false; readonly error: string };

/** One node's versions against the stack file's. */
export interface NodeVersions {
  readonly node: string;
  readonly talos: string;
  readonly kubernetes: string;
  readonly skew: boolean;
}

/** Everything `health` found. */
export interface HealthReport {
  readonly talos: { readonly ok: boolean; readonly detail: string };
  readonly members: readonly MemberHealth[];
  readonly alarms: readonly EtcdAlarm[] | { readonly error: string };
  readonly certificates: CertificateSurvey;
  readonly backup: Awaited<ReturnType<NewestBackup>>;
  readonly versions: readonly NodeVersions[];
  /** Why the cluster is unhealthy, one line each; empty when healthy. */
  readonly problems: readonly string[];
}

/** An in-use ratio under this (with a database of at least {@link DEFRAG_MIN_BYTES}) suggests `etcd defrag`. */
export const DEFRAG_RATIO = 0.5;
/** Below this size a defragmentation is not worth suggesting. */
export const DEFRAG_MIN_BYTES = 100 * 1000 * 1000;

/** True when the alarms were read (Array.isArray does not narrow a readonly array). */
const alarmsRead = (alarms: HealthReport["alarms"]): alarms is readonly EtcdAlarm[] =>
  Array.isArray(alarms);

/** The etcd status of every control plane's member. */
export async function memberStatuses(
  client: TalosClient,
  cluster: DeployedCluster,
): Promise<MemberHealth[]> {
  const members: MemberHealth[] = [];
  for (const cp of controlPlanes(cluster)) {
    try {
      members.push({ node: cp.name, ok: true, ...(await client.etcdStatus(cp.address)) });
    } catch (error) {
      members.push({ node: cp.name, ok: false, error: errorReason(error) });
    }
  }
  return members;
}

/** The problems of etcd's members: unread, with errors, without one leader they agree on. */
export function memberProblems(members: readonly MemberHealth[]): string[] {
  const problems: string[] = [];
  const read = members.filter((m): m is Extract<MemberHealth, { ok: true }> => m.ok);
  for (const m of members) {
    if (!m.ok) problems.push(`etcd on ${m.node}: ${m.error}`);
    else if (m.errors.length > 0) problems.push(`etcd on ${m.node}: ${m.errors.join(", ")}`);
  }
  const leaders = new Set(read.map((m) => m.leaderId).filter((id) => id !== "" && id !== "0"));
  if (read.length > 0 && leaders.size !== 1) {
    problems.push(
      leaders.size === 0
        ? "etcd: no member sees a leader"
        : `etcd: the members see different leaders (${[...leaders].join(", ")})`,
    );
  } else if (read.length > 0 && !read.some((m) => m.memberId === [...leaders][0])) {
    problems.push(`etcd: the leader ${[...leaders][0]} is not one of the control planes' members`);
  }
  return problems;
}

/** Each node's Talos and kubelet version, skew being any that differs from the stack file's. */
async function nodeVersions(
  client: TalosClient,
  cluster: DeployedCluster,
): Promise<NodeVersions[]> {
  const rows: NodeVersions[] = [];
  for (const node of cluster.nodes) {
    const talos = await client.nodeVersion(node.address).catch((e) => `? (${errorReason(e)})`);
    const kubernetes = await client.kubeletVersion(node.address).catch(() => "?");
    rows.push({
      node: node.name,
      talos,
      kubernetes,
      skew:
        !sameVersion(talos, cluster.stack.talosVersion) ||
        !sameVersion(kubernetes, cluster.stack.kubernetesVersion),
    });
  }
  return rows;
}

/** Reads the whole report; never throws for a node or member that does not answer. */
export async function healthReport(
  client: TalosClient,
  deps: DayTwoDeps,
  cluster: DeployedCluster,
  options: { readonly healthTimeoutMs: number; readonly newestBackup: NewestBackup },
): Promise<HealthReport> {
  const gate = await healthGate(client, cluster, options.healthTimeoutMs);
  const talos = gate.ok ? { ok: true, detail: gate.detail } : { ok: false, detail: gate.reason };
  const members = await memberStatuses(client, cluster);
  let alarms: HealthReport["alarms"] = { error: "no control plane answered" };
  for (const cp of controlPlanes(cluster)) {
    try {
      alarms = await client.etcdAlarms(cp.address);
      break;
    } catch (error) {
      alarms = { error: errorReason(error) };
    }
  }
  const certificates = await surveyCertificates(deps, cluster);
  const backup = await options
    .newestBackup(cluster.stack.env)
    // Backups that cannot be read cannot be shown to be fresh: that counts as a problem.
    .catch((error: unknown) => ({ unavailable: errorReason(error), overdueAfterMs: 0 }));
  const versions = await nodeVersions(client, cluster);
  const stale = backupProblem(backup, deps.clock.now());
  const problems = [
    ...(talos.ok ? [] : [`talos: ${talos.detail}`]),
    ...memberProblems(members),
    ...(alarmsRead(alarms)
      ? alarms.map((a) => `etcd alarm ${a.alarm} on member ${a.memberId}`)
      : [`etcd alarms: ${alarms.error}`]),
    ...versions
      .filter((v) => v.skew)
      .map(
        (v) =>
          `version skew on ${v.node}: Talos ${v.talos}, Kubernetes ${v.kubernetes} (stack: ${cluster.stack.talosVersion}, ${cluster.stack.kubernetesVersion})`,
      ),
    ...certificates.unread.map((u) => `certificate ${u.name}: ${u.error}`),
    ...(stale ? [stale] : []),
  ];
  return { talos, members, alarms, certificates, backup, versions, problems };
}

/** A size as etcd's status prints it (SI). */
export function formatBytes(bytes: number): string {
  const units = ["B", "kB", "MB", "GB", "TB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${unit === 0 ? value : value.toFixed(1)} ${units[unit]}`;
}

/** Age in whole hours or days. */
function formatAge(ms: number): string {
  const hours = Math.floor(ms / 3_600_000);
  return hours < 48 ? `${hours}h` : `${Math.floor(hours / 24)}d`;
}

/** The report as printed. */
export function formatHealth(report: HealthReport, now: number, minDays: number): string {
  const lines = [`talos health: ${report.talos.ok ? "ok" : "FAILED"} (${report.talos.detail})`];
  lines.push("etcd:");
  for (const m of report.members) {
    if (!m.ok) {
      lines.push(`  ${m.node}: unreadable (${m.error})`);
      continue;
    }
    const leader = m.memberId === m.leaderId ? ", leader" : "";
    const hint =
      m.dbSizeBytes >= DEFRAG_MIN_BYTES && m.inUseRatio < DEFRAG_RATIO
        ? " (etcd defrag would free space)"
        : "";
    lines.push(
      `  ${m.node}: member ${m.memberId}${leader}${m.learner ? ", learner" : ""}, db ${formatBytes(m.dbSizeBytes)}, in use ${formatBytes(m.inUseBytes)} (${(m.inUseRatio * 100).toFixed(0)}%)${m.errors.length > 0 ? `, errors: ${m.errors.join(", ")}` : ""}${hint}`,
    );
  }
  lines.push(
    alarmsRead(report.alarms)
      ? `  alarms: ${report.alarms.length === 0 ? "none" : report.alarms.map((a) => `${a.alarm} (${a.memberId})`).join(", ")}`
      : `  alarms: unreadable (${report.alarms.error})`,
  );
  lines.push("certificates:");
  lines.push(
    ...formatCertificates(report.certificates.certificates, report.certificates.unread, minDays)
      .trimEnd()
      .split("\n")
      .map((line) => `  ${line}`),
  );
  lines.push(
    "at" in report.backup
      ? `newest backup: ${report.backup.at.toISOString()} (${formatAge(now - report.backup.at.getTime())} old, ${report.backup.where})`
      : `newest backup: ${report.backup.unavailable}`,
  );
  lines.push("versions:");
  for (const v of report.versions) {
    lines.push(
      `  ${v.node}: Talos ${v.talos}, Kubernetes ${v.kubernetes}${v.skew ? "  SKEW" : ""}`,
    );
  }
  return `${lines.join("\n")}\n`;
}

/** `health` as asked. */
interface HealthCommand {
  readonly env: string;
  readonly minDays: number;
  readonly healthTimeoutMs: number;
  readonly json: boolean;
  readonly installCli: boolean;
  /** The newest backup's hook. @default {@link noBackupsConfigured} */
  readonly newestBackup?: NewestBackup;
}

/** Runs `health`: 8 when unhealthy, else 7 when a certificate is under `minDays`, else 0. */
export async function health(ctx: CliContext, request: HealthCommand): Promise<ExitCodeValue> {
  const { report, now } = await runDayTwo(
    ctx,
    { command: "health", env: request.env, installCli: request.installCli, readOnly: true },
    async ({ client, deps, cluster }) => ({
      now: deps.clock.now(),
      report: await healthReport(client, deps, cluster, {
        healthTimeoutMs: request.healthTimeoutMs,
        newestBackup: request.newestBackup ?? noBackupsConfigured,
      }),
    }),
  );
  const expiring = expiringCertificates(report.certificates.certificates, request.minDays);
  if (request.json) {
    ctx.stdout.write(
      `${JSON.stringify(
        {
          ...report,
          certificates: certificatesJson(report.certificates, request.minDays),
          backup:
            "at" in report.backup
              ? {
                  at: report.backup.at.toISOString(),
                  where: report.backup.where,
                  ...(report.backup.overdueAfterMs !== undefined
                    ? { overdueAfterMs: report.backup.overdueAfterMs }
                    : {}),
                }
              : report.backup,
        },
        null,
        2,
      )}\n`,
    );
  } else {
    ctx.stdout.write(formatHealth(report, now, request.minDays));
  }
  if (report.problems.length > 0) {
    ctx.stderr.write(
      `health ${request.env}: unhealthy:\n${report.problems.map((p) => `  ${p}\n`).join("")}`,
    );
    return ExitCode.unhealthy;
  }
  if (expiring.length > 0) {
    ctx.stderr.write(
      `health ${request.env}: healthy, but ${expiring.map((c) => `${c.name} (${c.daysLeft} days)`).join(", ")} under ${request.minDays} days (npm run platform -- certs ${request.env})\n`,
    );
    return ExitCode.expiring;
  }
  ctx.stderr.write(`health ${request.env}: healthy\n`);
  return ExitCode.ok;
}
