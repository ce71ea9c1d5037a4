// `drift <env>`: for every node, what the stack says against what the node runs: the Talos version,
// the kubelet's Kubernetes version, the image schematic it booted (extensions, kernel arguments) and
// the machine config (compared as data, see configCompare.ts).
// Each difference is classified by what brings the node back in line: `staged` (the stack's config
// waits for a reboot: rollout), `reboot` (the stack's config runs, but boot-time fields of it wait
// for a reboot, as Talos 1.14 applies every change at once: rollout; `reboot?` when what the node
// booted was not recorded, rebootState.ts), `pending` (the stack file asks for versions the last up
// did not deploy yet: up), `drift` (changed behind the program's back: up restores it). A table,
// then the paths that differ; exit 6 on any difference so a scheduled job can alert on it.
import * as path from "node:path";
import type { CliContext } from "../context";
import { ExitCode, type ExitCodeValue, errorReason } from "../errors";
import type { DeployedCluster } from "./cluster";
import { configDifferences } from "./configCompare";
import { sameVersion } from "./gates";
import { rebootState } from "./rebootState";
import { runDayTwo } from "./run";
import type { TalosClient } from "./talosClient";
import { imageSchematic } from "./talosctlOutput";

/** One node's comparison. */
interface NodeDrift {
  readonly name: string;
  readonly role: string;
  readonly status:
    "ok" | "staged" | "reboot" | "reboot?" | "pending" | "drift" | "unreachable" | "not deployed";
  readonly talos: string;
  readonly kubernetes: string;
  readonly schematic: string;
  readonly config: string;
  /** Paths at which the config differs. */
  readonly configPaths: readonly string[];
  /** What waits for a reboot of a node that runs the stack's config (boot-time fields, or why unknown). */
  readonly rebootWaits: readonly string[];
  readonly error?: string;
}

/** How many config paths are listed per node before "… and N more". */
const MAX_PATHS = 15;

/** A version as the stack file wants it, the last up deployed it and the node reports it. */
function versionCell(
  want: string,
  deployed: string,
  got: string | undefined,
): { cell: string; status: "ok" | "pending" | "drift" } {
  if (got === undefined) return { cell: "?", status: "ok" };
  if (sameVersion(want, got)) return { cell: got, status: "ok" };
  // The node runs what the last up deployed: the stack file's new version waits for an up.
  const status = sameVersion(deployed, got) ? "pending" : "drift";
  return { cell: `${got} (stack: ${want})`, status };
}

/**
 * The schematic a node booted against the stack's (desiredInstallers) and the one the last up
 * recorded (installerImages): the recorded one while the stack asks for a new one waits for up's
 * schematic roll; any other is drift. A node not on an Image Factory image shows `-`.
 */
function schematicCell(
  desired: string | undefined,
  recorded: string | undefined,
  got: string | undefined,
): { cell: string; status: "ok" | "pending" | "drift" } {
  const want = desired && imageSchematic(desired);
  if (got === undefined || want === undefined)
    return { cell: got ? short(got) : "-", status: "ok" };
  if (got === want) return { cell: short(got), status: "ok" };
  const status = recorded && imageSchematic(recorded) === got ? "pending" : "drift";
  return { cell: `${short(got)} (stack: ${short(want)})`, status };
}

/** A schematic ID's first 12 characters, as the Image Factory shows it. */
const short = (id: string) => id.slice(0, 12);

/** The worst of some statuses: drift over pending over a reboot's wait over ok. */
const ORDER = ["ok", "reboot?", "reboot", "staged", "pending", "drift"] as const;
const worst = (statuses: readonly (typeof ORDER)[number][]) =>
  ORDER[Math.max(...statuses.map((s) => ORDER.indexOf(s)))];

/** Compares every node with the stack; never throws for a node that does not answer. */
async function compareNodes(client: TalosClient, cluster: DeployedCluster): Promise<NodeDrift[]> {
  const want = cluster.stack;
  const rows: NodeDrift[] = [];
  for (const node of cluster.nodes) {
    let talos: string | undefined;
    try {
      talos = await client.nodeVersion(node.address);
    } catch (error) {
      rows.push({
        name: node.name,
        role: node.role,
        status: "unreachable",
        talos: "?",
        kubernetes: "?",
        schematic: "?",
        config: "?",
        configPaths: [],
        rebootWaits: [],
        error: errorReason(error),
      });
      continue;
    }
    const errors: string[] = [];
    let schematic: string | undefined;
    try {
      schematic = await client.schematic(node.address);
    } catch (error) {
      errors.push(`schematic: ${errorReason(error)}`);
    }
    let kubelet: string | undefined;
    try {
      kubelet = await client.kubeletVersion(node.address);
    } catch (error) {
      errors.push(`kubelet: ${errorReason(error)}`);
    }
    let configPaths: string[] = [];
    let rebootWaits: readonly string[] = [];
    let config = "?";
    let configStatus: "ok" | "staged" | "reboot" | "reboot?" | "drift" = "ok";
    const expected = cluster.machineConfigurations[node.name];
    if (expected === undefined) {
      config = "no generated config in the outputs";
    } else {
      try {
        const reboot = await rebootState(client, node.address, cluster.bootRecords[node.name]);
        configPaths = configDifferences(expected, reboot.running);
        if (configPaths.length > 0) {
          const staged = configDifferences(expected, reboot.nextBoot);
          configStatus = reboot.state.kind === "staged" && staged.length === 0 ? "staged" : "drift";
        } else if (reboot.state.kind === "bootTime") {
          configStatus = "reboot";
          rebootWaits = reboot.state.fields.map((field) => `boot-time ${field}`);
        } else if (reboot.state.kind === "unknown") {
          configStatus = "reboot?";
          rebootWaits = [`may: ${reboot.state.reason}`];
        }
        config =
          configPaths.length > 0
            ? `${configPaths.length} ${configPaths.length === 1 ? "path differs" : "paths differ"}${configStatus === "staged" ? " (staged)" : ""}`
            : configStatus === "reboot"
              ? `same (${rebootWaits.length} boot-time)`
              : configStatus === "reboot?"
                ? "same (booted ?)"
                : "same";
      } catch (error) {
        errors.push(`config: ${errorReason(error)}`);
      }
    }
    const t = versionCell(want.talosVersion, cluster.deployed.talosVersion, talos);
    const k = versionCell(want.kubernetesVersion, cluster.deployed.kubernetesVersion, kubelet);
    const x = schematicCell(cluster.desiredInstallers[node.name], node.installerImage, schematic);
    const status = worst([t.status, k.status, x.status, configStatus]);
    rows.push({
      name: node.name,
      role: node.role,
      status: status === "ok" && errors.length > 0 ? "unreachable" : status,
      talos: t.cell,
      kubernetes: k.cell,
      schematic: x.cell,
      config,
      configPaths,
      rebootWaits,
      ...(errors.length > 0 ? { error: errors.join("; ") } : {}),
    });
  }
  for (const node of cluster.undeployed) {
    rows.push({
      name: node.name,
      role: node.role,
      status: "not deployed",
      talos: "-",
      kubernetes: "-",
      schematic: "-",
      config: "-",
      configPaths: [],
      rebootWaits: [],
    });
  }
  return rows;
}

/** The table as printed, then the differing paths and errors per node. */
function formatDrift(rows: readonly NodeDrift[]): string {
  const header = ["NODE", "ROLE", "TALOS", "KUBERNETES", "SCHEMATIC", "CONFIG", "STATUS"];
  const cells = rows.map((r) => [
    r.name,
    r.role,
    r.talos,
    r.kubernetes,
    r.schematic,
    r.config,
    r.status,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i]))
      .join("  ")
      .trimEnd();
  const lines = [line(header), ...cells.map(line)];
  for (const row of rows) {
    if (row.configPaths.length > 0) {
      lines.push(`${row.name} config differs at:`);
      for (const p of row.configPaths.slice(0, MAX_PATHS)) lines.push(`  ${p}`);
      if (row.configPaths.length > MAX_PATHS)
        lines.push(`  … and ${row.configPaths.length - MAX_PATHS} more`);
    }
    if (row.rebootWaits.length > 0) {
      lines.push(`${row.name} waits for a reboot:`);
      for (const wait of row.rebootWaits) lines.push(`  ${wait}`);
    }
    if (row.error) lines.push(`${row.name}: ${row.error}`);
  }
  return `${lines.join("\n")}\n`;
}

/** `drift` as asked. */
interface DriftCommand {
  readonly env: string;
  readonly installCli: boolean;
}

/** Runs `drift`: 0 when every node matches, 6 on drift, 1 when a node could not be read. */
export async function drift(ctx: CliContext, request: DriftCommand): Promise<ExitCodeValue> {
  const { cluster, rows } = await runDayTwo(
    ctx,
    { command: "drift", env: request.env, installCli: request.installCli },
    async ({ client, cluster }) => ({ cluster, rows: await compareNodes(client, cluster) }),
  );
  ctx.stdout.write(formatDrift(rows));
  for (const note of cluster.notes) ctx.stdout.write(`note: ${note}\n`);
  const file = path.basename(cluster.stack.file);
  const names = (status: NodeDrift["status"]) =>
    rows.filter((r) => r.status === status).map((r) => r.name);
  const [foreign, pending, staged, reboot, unknown, missing] = (
    ["drift", "pending", "staged", "reboot", "reboot?", "not deployed"] as const
  ).map(names);
  const differing =
    foreign.length +
    pending.length +
    staged.length +
    reboot.length +
    unknown.length +
    missing.length;
  if (differing > 0) {
    const classes = [
      foreign.length > 0 &&
        `changed behind the program's back: ${foreign.join(", ")} (up restores the stack's config and versions)`,
      pending.length > 0 &&
        `on the versions or schematic the last up deployed, not the stack file's: ${pending.join(", ")} (up converges them)`,
      staged.length > 0 &&
        `the stack's config staged, waiting for a reboot: ${staged.join(", ")} (rollout)`,
      reboot.length > 0 &&
        `the stack's config applied, its boot-time fields waiting for a reboot: ${reboot.join(", ")} (rollout)`,
      unknown.length > 0 &&
        `the stack's config applied since they booted, what they booted not recorded (they may wait for a reboot): ${unknown.join(", ")} (rollout reboots them)`,
      missing.length > 0 && `not deployed yet: ${missing.join(", ")} (up)`,
    ].filter((line): line is string => typeof line === "string");
    ctx.stderr.write(
      `drift ${request.env}: ${differing} of ${rows.length} nodes differ from ${file}:\n${classes.map((line) => `  ${line}`).join("\n")}\n` +
        `  commands: npm run platform -- up ${request.env}; npm run platform -- rollout ${request.env}\n`,
    );
    return ExitCode.drift;
  }
  const unread = rows.filter((r) => r.status === "unreachable");
  if (unread.length > 0) {
    ctx.stderr.write(
      `drift ${request.env}: ${unread.length} node${unread.length === 1 ? "" : "s"} could not be read (${unread.map((r) => r.name).join(", ")}); the others match ${file}\n`,
    );
    return ExitCode.failed;
  }
  ctx.stderr.write(`drift ${request.env}: no drift; ${rows.length} nodes match ${file}\n`);
  return ExitCode.ok;
}
