// `npm run bench:engine`: emulated Talos clusters of each size in BENCH_ENGINE_SIZES (default 5,50;
// 3 control planes, the rest workers, on 127.16.<n>.0/24) brought up with the real engine through
// the project's CLI (test/engine/harness.ts: EngineSandbox, cli()), the Talos provider plugin and the
// real talosctl and kubectl, against the node emulator (test/emulator/talos-emulator). Per size it
// times: `up` from maintenance mode to healthy, a no-change `preview` (what a pull request waits
// for), `up --no-rollout` staging a change that needs a reboot, the `rollout` of that change and an
// `upgrade talos --to` a patch release; for both rolls the sequential steps, and per step the time
// talosctl and kubectl ran (every call timed by a wrapper) and the rest, the CLI's own time. Prints
// figures beside the goals; asserts nothing. BENCH_ENGINE_BATCH (default 5) is the stack's
// cluster.rollout.maxUnavailableWorkers. Needs the engine tier's tools (scripts/engine-tools.sh).
import type { EngineEvent } from "@pulumi/pulumi/automation";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parse, stringify } from "yaml";
import {
  buildEmulatorTools,
  startTalosEmulator,
  waitForMaintenance,
} from "../test/emulator/talosEmulator";
import { type CliRun, EngineSandbox, ROOT, engineTools } from "../test/engine/harness";
import {
  CONTROL_PLANES,
  LineClock,
  type RollKind,
  type RollStep,
  benchNodes,
  benchStackConfig,
  benchStackFile,
  benchSubnet,
  expectedSteps,
  parseToolLog,
  rollSteps,
} from "./engineStack";

const SIZES = (process.env.BENCH_ENGINE_SIZES ?? "5,50").split(",").map(Number);
const BATCH = Number(process.env.BENCH_ENGINE_BATCH ?? 5);
const FROM = "v1.13.0";
const TO = "v1.13.9";
/** The CLI's waits: generous, the machine is shared; a bench measures, it does not gate. */
const WAITS = ["--upgrade-timeout", "10m", "--node-timeout", "10m", "--health-timeout", "10m"];
/** A change Talos can only apply with a reboot (so `up` stages it), as in the lifecycle test. */
const UDEV_RULE = 'SUBSYSTEM=="drm", GROUP="44"';
/** The goals the figures are printed against. */
const GOALS = { up: 1.5, overheadMs: 2000, preview: 2 };

const PROJECT = (parse(fs.readFileSync(path.join(ROOT, "Pulumi.yaml"), "utf8")) as { name: string })
  .name;

interface Timed {
  ms: number;
  run: CliRun;
}

interface Roll {
  ms: number;
  steps: RollStep[];
  calls: number;
}

interface SizeResult {
  size: number;
  workers: number;
  load: [number, number];
  up?: Timed & { created: number; applies: { spanS: number; maxInFlight: number } };
  preview?: Timed & { changes: number };
  stage?: Timed;
  rollout?: Roll;
  upgrade?: Roll;
  failed?: string;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const load = () => Number(os.loadavg()[0].toFixed(1));

/** Counts from the run's summary event: every operation but `same` and `read` (a read changes nothing). */
function changeCount(events: readonly EngineEvent[], op?: string): number {
  const changes = events.find((e) => e.summaryEvent)?.summaryEvent?.resourceChanges ?? {};
  return Object.entries(changes)
    .filter(([kind]) => (op ? kind === op : kind !== "same" && kind !== "read"))
    .reduce((sum, [, n]) => sum + (n ?? 0), 0);
}

/**
 * The config applies of an `up`: from the first one's start to the last one's end (the events'
 * timestamps are whole seconds), and how many were under way at once (Pulumi's parallelism).
 */
function applySpan(events: readonly EngineEvent[]): { spanS: number; maxInFlight: number } {
  const type = "talos:machine/configurationApply:ConfigurationApply";
  let inFlight = 0;
  let maxInFlight = 0;
  let first: number | undefined;
  let last = 0;
  for (const e of events) {
    if (e.resourcePreEvent?.metadata.type === type && e.resourcePreEvent.metadata.op !== "same") {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      first ??= e.timestamp;
    }
    if (e.resOutputsEvent?.metadata.type === type && e.resOutputsEvent.metadata.op !== "same") {
      inFlight--;
      last = e.timestamp;
    }
  }
  return { spanS: first === undefined ? 0 : last - first, maxInFlight };
}

/** talosctl and kubectl behind wrappers that log each call's start and end (bash's clock, µs). */
function toolWrappers(dir: string, talosctl: string): { env: Record<string, string>; log: string } {
  const bin = path.join(dir, "timed-tools");
  fs.mkdirSync(bin, { recursive: true });
  const log = path.join(bin, "calls.log");
  fs.writeFileSync(log, "");
  const kubectl = process.env.KUBECTL ?? "kubectl";
  const wrap = (name: string, real: string) => {
    const file = path.join(bin, name);
    fs.writeFileSync(
      file,
      [
        "#!/usr/bin/env bash",
        "start=$EPOCHREALTIME",
        `${JSON.stringify(real)} "$@"`,
        "rc=$?",
        `printf '%s %s %s %s %s\\n' "$start" "$EPOCHREALTIME" "$rc" ${name} "$1" >>${JSON.stringify(log)}`,
        "exit $rc",
        "",
      ].join("\n"),
      { mode: 0o755 },
    );
    return file;
  };
  return {
    env: { TALOSCTL: wrap("talosctl", talosctl), KUBECTL: wrap("kubectl", kubectl) },
    log,
  };
}

function explain(run: CliRun): string {
  const tail = (text: string) => text.split("\n").slice(-40).join("\n");
  return `exit ${run.code}\n--- stdout (end)\n${tail(run.stdout)}\n--- stderr (end)\n${tail(run.stderr)}`;
}

async function benchSize(size: number, index: number): Promise<SizeResult> {
  const subnet = benchSubnet(index);
  const nodes = benchNodes(size, subnet);
  const env = `bench${size}`;
  const result: SizeResult = { size, workers: size - CONTROL_PLANES, load: [load(), 0] };
  console.log(
    `\n${size} nodes (${CONTROL_PLANES} control planes, ${result.workers} workers, batch ${BATCH}) on ${subnet}.0/24, load average ${result.load[0]}`,
  );
  const tools = buildEmulatorTools();
  const emulatorLog: string[] = [];
  const emulator = await startTalosEmulator({
    binary: tools.emulator,
    nodes: nodes.map((n) => ({ name: n.name, address: n.address })),
    talosVersion: FROM,
    timeoutMs: 120 * 60_000,
    log: (line) => {
      emulatorLog.push(line);
      if (emulatorLog.length > 60) emulatorLog.shift();
    },
  });
  const sandbox = new EngineSandbox(engineTools());
  try {
    const stackFile = sandbox.writeStack(
      ".",
      env,
      stringify(
        benchStackFile(
          PROJECT,
          benchStackConfig({
            name: env,
            subnet,
            nodes,
            talosVersion: FROM,
            batch: BATCH,
            healthTimeout: "10m",
          }),
        ),
      ),
    );
    await waitForMaintenance(
      emulator,
      nodes.map((n) => n.name),
    );
    const wrapped = toolWrappers(sandbox.dir, tools.talosctl);
    const cliEnv = { ...wrapped.env, TALOS_STANDIN_RETRY_WINDOW: "120s" };
    const timed = async (argv: string[], clock?: LineClock): Promise<Timed> => {
      const started = Date.now();
      const run = await sandbox.cli(
        argv,
        cliEnv,
        clock ? { stdout: (text) => clock.write(text) } : undefined,
      );
      const ms = Date.now() - started;
      console.log(`  ${argv.slice(0, 2).join(" ")}: ${seconds(ms)} (exit ${run.code})`);
      if (run.code !== 0) {
        throw new Error(
          `${argv.join(" ")} failed: ${explain(run)}\n--- emulator (end)\n${emulatorLog.join("\n")}`,
        );
      }
      return { ms, run };
    };
    const roll = async (kind: RollKind, argv: string[]): Promise<Roll> => {
      const clock = new LineClock();
      const before = fs.readFileSync(wrapped.log, "utf8").length;
      const { ms } = await timed(argv, clock);
      const calls = parseToolLog(fs.readFileSync(wrapped.log, "utf8").slice(before));
      return { ms, steps: rollSteps(kind, clock.lines, calls), calls: calls.length };
    };

    const up = await timed(["up", env]);
    result.up = {
      ...up,
      created: changeCount(up.run.events, "create"),
      applies: applySpan(up.run.events),
    };
    const preview = await timed(["preview", env]);
    result.preview = { ...preview, changes: changeCount(preview.run.events) };
    // What a no-change preview still plans (expected: nothing), named.
    const planned = preview.run.events.flatMap((e) =>
      e.resourcePreEvent && e.resourcePreEvent.metadata.op !== "same"
        ? [
            `${e.resourcePreEvent.metadata.op} ${e.resourcePreEvent.metadata.urn.split("::").at(-1)}`,
          ]
        : [],
    );
    if (planned.length > 0) console.log(`    preview plans: ${planned.join(", ")}`);

    const text = fs.readFileSync(stackFile, "utf8");
    const config = parse(text) as { config: Record<string, Record<string, unknown>> };
    config.config[`${PROJECT}:cluster`].patches = {
      all: [{ machine: { udev: { rules: [UDEV_RULE] } } }],
    };
    fs.writeFileSync(stackFile, stringify(config));
    result.stage = await timed(["up", env, "--no-rollout"]);
    result.rollout = await roll("rollout", ["rollout", env, "--drain-timeout", "5m"]);
    result.upgrade = await roll("upgrade", ["upgrade", "talos", env, "--to", TO, ...WAITS]);
  } catch (error) {
    result.failed = (error as Error).message;
    console.log(`  stopped: ${result.failed}`);
  } finally {
    await emulator.stop();
    if (process.env.ENGINE_KEEP_SANDBOX === undefined) sandbox.remove();
    else console.log(`  sandbox kept: ${sandbox.dir}`);
    result.load[1] = load();
  }
  return result;
}

/** Prints rows as right-aligned columns, the first row a header. */
function table(rows: string[][]): void {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => (row[i] ?? "").length)));
  rows.forEach((row, r) => {
    console.log(`  ${row.map((cell, i) => cell.padStart(widths[i])).join("  ")}`);
    if (r === 0) console.log(`  ${widths.map((w) => "-".repeat(w)).join("  ")}`);
  });
}

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);
const max = (values: number[]) => Math.max(0, ...values);

function rollRow(name: string, r: SizeResult, roll: Roll | undefined): string[] {
  if (!roll) return [String(r.size), name, "-", "-", "-", "-", "-", "-", "-", "-"];
  const steps = roll.steps;
  return [
    String(r.size),
    name,
    seconds(roll.ms),
    seconds(roll.ms - steps.reduce((sum, s) => sum + s.wallMs, 0)),
    `${steps.length} / ${expectedSteps(CONTROL_PLANES, r.workers, BATCH)}`,
    seconds(mean(steps.map((s) => s.wallMs))),
    seconds(mean(steps.map((s) => s.toolMs))),
    (mean(steps.map((s) => s.calls)) || 0).toFixed(1),
    seconds(mean(steps.map((s) => s.cliMs))),
    seconds(max(steps.map((s) => s.cliMs))),
  ];
}

function report(results: SizeResult[]): void {
  console.log(`\nbench:engine, ${new Date().toISOString()}, ${os.cpus().length} CPUs`);
  table([
    [
      "nodes",
      "up",
      "created",
      "applies (s)",
      "max in flight",
      "preview",
      "changes",
      "stage up",
      "load",
    ],
    ...results.map((r) => [
      String(r.size),
      r.up ? seconds(r.up.ms) : "-",
      r.up ? String(r.up.created) : "-",
      r.up ? String(r.up.applies.spanS) : "-",
      r.up ? String(r.up.applies.maxInFlight) : "-",
      r.preview ? seconds(r.preview.ms) : "-",
      r.preview ? String(r.preview.changes) : "-",
      r.stage ? seconds(r.stage.ms) : "-",
      `${r.load[0]} → ${r.load[1]}`,
    ]),
  ]);
  console.log("");
  table([
    [
      "nodes",
      "roll",
      "wall",
      "outside steps",
      "steps / goal",
      "per step",
      "tools",
      "calls",
      "CLI",
      "CLI max",
    ],
    ...results.flatMap((r) => [rollRow("rollout", r, r.rollout), rollRow("upgrade", r, r.upgrade)]),
  ]);
  console.log(
    "  (outside steps: the command's start, preflight, snapshot and end; per step: mean wall time; tools: time talosctl or kubectl ran; calls: their number; CLI: the rest, the CLI's own work and its poll sleeps)",
  );

  console.log("\ngoals (figures, not verdicts):");
  const base = results.find((r) => r.up && r.preview);
  for (const r of results) {
    if (base && r !== base && r.up && base.up) {
      console.log(
        `  up of ${r.size} / up of ${base.size}: ${(r.up.ms / base.up.ms).toFixed(2)} (goal ≤ ${GOALS.up})`,
      );
    }
    if (base && r !== base && r.preview && base.preview) {
      console.log(
        `  no-change preview of ${r.size} / of ${base.size}: ${(r.preview.ms / base.preview.ms).toFixed(2)} (goal ≤ ${GOALS.preview})`,
      );
    }
    for (const [name, roll] of [
      ["rollout", r.rollout],
      ["upgrade", r.upgrade],
    ] as const) {
      if (!roll) continue;
      const cli = roll.steps.map((s) => s.cliMs);
      console.log(
        `  ${r.size} nodes, ${name}: ${roll.steps.length} sequential steps (goal ${expectedSteps(CONTROL_PLANES, r.workers, BATCH)} = ${CONTROL_PLANES} + ceil(${r.workers}/${BATCH})); CLI time per step mean ${seconds(mean(cli))}, max ${seconds(max(cli))} (goal < ${seconds(GOALS.overheadMs)})`,
      );
    }
    if (r.failed) console.log(`  ${r.size} nodes: stopped early (above)`);
  }
  if (process.env.BENCH_ENGINE_STEPS) {
    for (const r of results) {
      for (const [name, roll] of [
        ["rollout", r.rollout],
        ["upgrade", r.upgrade],
      ] as const) {
        if (!roll) continue;
        console.log(`\n${r.size} nodes, ${name}, each step:`);
        table([
          ["step", "wall", "tools", "calls", "CLI"],
          ...roll.steps.map((s) => [
            s.label,
            seconds(s.wallMs),
            seconds(s.toolMs),
            String(s.calls),
            seconds(s.cliMs),
          ]),
        ]);
      }
    }
  }
}

async function main(): Promise<void> {
  if (SIZES.some((s) => !Number.isInteger(s)) || !Number.isInteger(BATCH) || BATCH < 1) {
    throw new Error("BENCH_ENGINE_SIZES is a list of whole numbers (5,50), BENCH_ENGINE_BATCH one");
  }
  const results: SizeResult[] = [];
  for (const [index, size] of SIZES.entries()) {
    results.push(await benchSize(size, index));
    report(results);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
