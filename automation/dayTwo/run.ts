// The prologue every day-two command shares, in one place: the CI guard, the stack file's nodes,
// the stack's lock (for a command that changes the cluster), the cluster from the stack file and the
// outputs, a Talos session (the talosconfig in a private temp file, removed when the command ends,
// also when it crashes), and on request the live preflight and an etcd snapshot, both printed.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { CliContext } from "../context";
import { UserError } from "../errors";
import { writePrivateFile } from "../files";
import { type DayTwoCommandName, checkDayTwoGuard, CLUSTER_CHANGING_COMMANDS } from "../guards";
import { chooseBackend } from "../backend";
import { readStackFile, resolveLayer } from "../layers";
import { type StackLock, withStackLock } from "../lock";
import type { OutputMap } from "@pulumi/pulumi/automation";
import {
  type DeployedCluster,
  controlPlanes,
  deployedCluster,
  loadCluster,
  readStackCluster,
} from "./cluster";
import { type DayTwoDeps, dayTwoDeps } from "./deps";
import { type LiveTarget, liveChecks } from "./preflight/checks";
import { type Observation, observeCluster } from "./preflight/observe";
import { type PreflightReport, assertPreflight, formatPreflight } from "./preflight/report";
import { type Snapshot, takeSnapshot } from "./snapshots";
import type { TalosClient, TalosConnection } from "./talosClient";

/** Runs `fn` with a client for the cluster; the talosconfig file exists only meanwhile. */
export async function withTalos<T>(
  deps: DayTwoDeps,
  cluster: DeployedCluster,
  fn: (client: TalosClient) => Promise<T>,
): Promise<T> {
  // mkdtemp creates the folder with mode 0700; the file inside is 0600.
  const dir = fs.mkdtempSync(path.join(deps.tmpDir ?? os.tmpdir(), "platform-talos-"));
  const cleanup = () => fs.rmSync(dir, { recursive: true, force: true });
  process.on("exit", cleanup);
  try {
    const talosconfig = path.join(dir, "talosconfig");
    writePrivateFile(talosconfig, cluster.talosconfig);
    const connection: TalosConnection = {
      talosconfig,
      endpoints: controlPlanes(cluster).map((cp) => cp.address),
      clusterTalosVersion: cluster.stack.talosVersion,
    };
    return await fn(deps.talos(connection));
  } finally {
    process.off("exit", cleanup);
    cleanup();
  }
}

/** A day-two command as the operator gave it. */
interface DayTwoRequest {
  readonly command: DayTwoCommandName;
  readonly env: string;
  readonly installCli: boolean;
  /** What the lock records (who holds the stack). @default the command and the environment */
  readonly commandLine?: string;
  /** A node named on the command line: it must be one of the stack file's. */
  readonly node?: string;
  /** Reads only (`rollout --dry-run`): neither refused in CI nor locked. */
  readonly readOnly?: boolean;
  /**
   * Runs inside `up`, which checked its guards and holds the stack's lease already, with the
   * outputs it read: nothing is checked or read again.
   */
  readonly withinUp?: { readonly outputs: OutputMap };
}

/** What a command's own steps work with. */
export interface DayTwoSession {
  readonly ctx: CliContext;
  readonly deps: DayTwoDeps;
  readonly cluster: DeployedCluster;
  readonly client: TalosClient;
  /** Writes one line to stdout. */
  readonly out: (line: string) => void;
  /**
   * The live preflight against `target`: printed under `title`, and refused (exit 3, every failed
   * check named) when any check failed.
   */
  preflight(
    title: string,
    target: LiveTarget,
    healthTimeoutMs: number,
  ): Promise<{ readonly observed: Observation; readonly report: PreflightReport }>;
  /** An etcd snapshot into the environment's store, keeping the newest `keep`; printed. */
  snapshot(keep: number): Promise<Snapshot>;
  /**
   * Why the command must stop before its next step, or undefined to go on: the operator asked it to
   * stop (Ctrl-C, SIGTERM), or another run took the stack's lease over.
   */
  stopReason(): string | undefined;
}

/** Before anything is read through the Pulumi CLI: the CI guard and the stack file's nodes. */
function precheck(ctx: CliContext, request: DayTwoRequest): void {
  if (!request.readOnly) checkDayTwoGuard(request.command, request.env, ctx.env);
  const stack = readStackCluster(ctx.repoRoot, request.env);
  if (request.node !== undefined && !stack.nodes.some((n) => n.name === request.node)) {
    throw new UserError({
      what: request.command,
      problem: `no node of that name in ${path.basename(stack.file)}`,
      got: JSON.stringify(request.node),
      fix:
        `Use one of: ${stack.nodes.map((n) => n.name).join(", ")} ` +
        "(run replace-node before taking the node out of the stack file: docs/runbooks/lost-proxmox-host.md)",
    });
  }
}

/** Runs a day-two command's steps after the shared prologue (see the file's header). */
export async function runDayTwo<T>(
  ctx: CliContext,
  request: DayTwoRequest,
  steps: (session: DayTwoSession) => Promise<T>,
): Promise<T> {
  if (!request.withinUp) precheck(ctx, request);
  const deps = dayTwoDeps(ctx);
  const out = (line: string) => ctx.stdout.write(`${line}\n`);
  const target = `foundation/${request.env}`;
  const session = async (lock?: StackLock) => {
    const cluster = request.withinUp
      ? deployedCluster(readStackCluster(ctx.repoRoot, request.env), request.withinUp.outputs)
      : await loadCluster(ctx, request.env, request.installCli);
    return withTalos(deps, cluster, (client) =>
      steps({
        ctx,
        deps,
        cluster,
        client,
        out,
        preflight: async (title, live, healthTimeoutMs) => {
          const observed = await observeCluster(client, cluster, { healthTimeoutMs });
          const checked = liveChecks(cluster, observed, live);
          out(formatPreflight(title, checked).trimEnd());
          assertPreflight(target, checked);
          return { observed, report: checked };
        },
        snapshot: async (keep) => {
          const snapshot = await takeSnapshot({
            client,
            cluster,
            repoRoot: ctx.repoRoot,
            now: deps.clock.now(),
            keep,
          });
          out(
            `etcd snapshot: ${path.relative(ctx.repoRoot, snapshot.file)} (from ${snapshot.from}, ${snapshot.bytes} bytes)`,
          );
          return snapshot;
        },
        stopReason: () =>
          ctx.signal?.aborted || ctx.interrupts?.stopping.aborted
            ? "the run was asked to stop"
            : lock?.lost()
              ? `another run took over the stack's lease (${lock.where})`
              : undefined,
      }),
    );
  };
  const changes =
    !request.readOnly && !request.withinUp && request.command in CLUSTER_CHANGING_COMMANDS;
  if (!changes) return session();
  const commandLine = request.commandLine ?? `${request.command} ${request.env}`;
  const layer = resolveLayer(ctx.repoRoot, "foundation");
  const backend = chooseBackend({
    env: ctx.env,
    layer,
    stackFile: readStackFile(layer, request.env),
    repoRoot: ctx.repoRoot,
  });
  return withStackLock(
    ctx,
    { layer: "foundation", project: layer.project, env: request.env, backendUrl: backend.url },
    commandLine,
    session,
  );
}
