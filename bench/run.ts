// `npm run bench`: evaluates the foundation program under mocks for 3, 30, 300 and 1000 nodes next to
// a baseline that registers the same resources with plain SDK calls, each compiled (what the CLI and
// `pulumi up` run) and under ts-node, each run in its own process. Then times the CLI's start-up
// against `node -e 0`. Prints figures and the goals they are measured against; asserts nothing.
// Wall time is what the goals name; CPU time (all threads) is printed too, being steadier on a busy
// machine. BENCH_SIZES=3,30 and BENCH_REPEATS=1 shorten it; BENCH_CLI=0 skips the CLI part.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { REPO_ROOT } from "../components/repo/root";

const SIZES = (process.env.BENCH_SIZES ?? "3,30,300,1000").split(",").map(Number);
// Three runs per cell, one at 1000 nodes (each of those takes up to a minute under ts-node).
const repeatsFor = (size: number) => Number(process.env.BENCH_REPEATS ?? (size >= 1000 ? 1 : 3));
const CLI_RUNS = Number(process.env.BENCH_CLI_RUNS ?? 11);

/** The goals of issue #13, at the largest size. */
const GOALS = { versusTsNodeBaseline: 0.4, versusCompiledBaseline: 1.3, memory: 1.1 };

type Mode = "program" | "baseline";
type Runtime = "compiled" | "ts-node";

interface Sample {
  ms: number;
  cpuMs: number;
  maxRssMiB: number;
  resources: number;
  invokes: number;
}

/**
 * How a worker is started: always under ts-node (the mocks are TypeScript); `compiled` has it load
 * the program from dist/ and the local Talos SDK from its compiled package, as `pulumi up` does.
 */
function workerCommand(runtime: Runtime): string[] {
  const worker = [
    "-r",
    "ts-node/register/transpile-only",
    path.join(REPO_ROOT, "bench", "worker.ts"),
  ];
  return runtime === "compiled" ? worker : ["--conditions=source", ...worker];
}

function measure(runtime: Runtime, mode: Mode, size: number): Sample {
  const args = [...workerCommand(runtime), mode, runtime, String(size)];
  const result = spawnSync(process.execPath, args, {
    cwd: REPO_ROOT,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.status !== 0) {
    throw new Error(`bench worker ${runtime} ${mode} ${size} failed:\n${result.stderr}`);
  }
  return JSON.parse(result.stdout.trim().split("\n").pop()!) as Sample;
}

/** The median run by time, with the largest peak memory seen. */
function best(runtime: Runtime, mode: Mode, size: number): Sample {
  const samples = Array.from({ length: repeatsFor(size) }, () => measure(runtime, mode, size));
  const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
  return {
    ...samples[0],
    ms: median(samples.map((s) => s.ms)),
    cpuMs: median(samples.map((s) => s.cpuMs)),
    maxRssMiB: Math.max(...samples.map((s) => s.maxRssMiB)),
  };
}

const pad = (text: string | number, width: number) => String(text).padStart(width);
const ratio = (a: number, b: number) => (a / b).toFixed(2);
const verdict = (value: number, goal: number) =>
  `${value.toFixed(2)} (goal ≤ ${goal}) ${value <= goal ? "met" : "NOT MET"}`;

/** Prints rows of cells as right-aligned columns; the first `heads` rows are headers. */
function table(rows: string[][], heads: number): void {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => (row[i] ?? "").length)));
  rows.forEach((row, r) => {
    console.log(`  ${row.map((cell, i) => pad(cell, widths[i])).join("  ")}`);
    if (r === heads - 1) console.log(`  ${widths.map((w) => "-".repeat(w)).join("  ")}`);
  });
}

interface Row {
  size: number;
  program: Sample;
  base: Sample;
  programTs: Sample;
  baseTs: Sample;
}

function timeTable(rows: Row[], clock: "ms" | "cpuMs"): void {
  table(
    [
      ["", "resources", "program", "baseline", "program", "baseline", "program compiled /", ""],
      [
        "nodes",
        "prog/base",
        "compiled",
        "compiled",
        "ts-node",
        "ts-node",
        "base compiled",
        "base ts-node",
      ],
      ...rows.map((r) => [
        String(r.size),
        `${r.program.resources}/${r.base.resources}`,
        r.program[clock].toFixed(0),
        r.base[clock].toFixed(0),
        r.programTs[clock].toFixed(0),
        r.baseTs[clock].toFixed(0),
        ratio(r.program[clock], r.base[clock]),
        ratio(r.program[clock], r.baseTs[clock]),
      ]),
    ],
    2,
  );
}

function goals(last: Row, clock: "ms" | "cpuMs"): void {
  console.log(
    `  program compiled / baseline under ts-node: ${verdict(last.program[clock] / last.baseTs[clock], GOALS.versusTsNodeBaseline)}`,
  );
  console.log(
    `  program compiled / baseline compiled:      ${verdict(last.program[clock] / last.base[clock], GOALS.versusCompiledBaseline)}`,
  );
}

function evaluation(): void {
  console.log(
    `Foundation evaluation under mocks: node ${process.version}, ${os.cpus().length} CPUs, load average ${os.loadavg()[0].toFixed(1)} at start;`,
  );
  console.log(
    `median of ${repeatsFor(3)} runs per cell (${repeatsFor(1000)} at 1000 nodes), each in its own process; time from the program's call to its last registration.`,
  );
  const rows: Row[] = [];
  for (const size of SIZES) {
    rows.push({
      size,
      program: best("compiled", "program", size),
      base: best("compiled", "baseline", size),
      programTs: best("ts-node", "program", size),
      baseTs: best("ts-node", "baseline", size),
    });
  }
  console.log("\nWall time (ms)");
  timeTable(rows, "ms");
  console.log("\nCPU time (ms, all threads)");
  timeTable(rows, "cpuMs");
  console.log("\nPeak memory (MiB, the run's peak RSS)");
  table(
    [
      ["", "program", "baseline", "program", "baseline", "program /"],
      ["nodes", "compiled", "compiled", "ts-node", "ts-node", "baseline compiled"],
      ...rows.map((r) => [
        String(r.size),
        r.program.maxRssMiB.toFixed(0),
        r.base.maxRssMiB.toFixed(0),
        r.programTs.maxRssMiB.toFixed(0),
        r.baseTs.maxRssMiB.toFixed(0),
        ratio(r.program.maxRssMiB, r.base.maxRssMiB),
      ]),
    ],
    2,
  );
  const last = rows[rows.length - 1];
  const from = rows.find((r) => r.size >= 30 && r.size < last.size);
  if (from) {
    // Linear growth: the time per added node stays about the same between the sizes.
    const steps = rows.filter((r) => r.size >= from.size);
    const perNode = (clock: "ms" | "cpuMs") =>
      steps
        .slice(1)
        .map(
          (r, i) =>
            `${steps[i].size}→${r.size}: ${((r.program[clock] - steps[i].program[clock]) / (r.size - steps[i].size)).toFixed(1)}`,
        )
        .join(", ");
    console.log(
      `\nGrowth of the compiled program, ms per added node: wall ${perNode("ms")}; CPU ${perNode("cpuMs")}`,
    );
  }
  console.log(`\nGoals at ${last.size} nodes, wall time:`);
  goals(last, "ms");
  console.log(`Goals at ${last.size} nodes, CPU time:`);
  goals(last, "cpuMs");
  console.log(
    `Peak RSS, program / baseline (compiled):   ${verdict(last.program.maxRssMiB / last.base.maxRssMiB, GOALS.memory)}`,
  );
  console.log(`Load average at the end: ${os.loadavg()[0].toFixed(1)}`);
}

/**
 * The median wall time, in ms, of whole-process runs of a command, which must exit with `expectCode`
 * every time (undefined: with the code of its first run).
 */
function startup(command: string, args: string[], expectCode: number | undefined): number {
  const times: number[] = [];
  for (let i = 0; i < CLI_RUNS; i++) {
    const started = process.hrtime.bigint();
    const result = spawnSync(command, args, { cwd: REPO_ROOT, encoding: "utf8" });
    times.push(Number(process.hrtime.bigint() - started) / 1e6);
    expectCode ??= result.status ?? undefined;
    if (result.status !== expectCode) {
      throw new Error(
        `${command} ${args.join(" ")}: exit ${result.status}, expected ${expectCode}\n${result.stderr}`,
      );
    }
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

function cliStartup(): void {
  const bin = path.join(REPO_ROOT, "bin", "platform");
  const help = spawnSync(bin, ["--help"], { cwd: REPO_ROOT, encoding: "utf8" }).stdout;
  const cases: [string, string, string[], number | undefined][] = [
    ["node -e 0", process.execPath, ["-e", "0"], 0],
    ["bin/platform --help", bin, ["--help"], 0],
    ["bin/platform up (usage error)", bin, ["up"], 2],
  ];
  if (/^\s+validate\b/m.test(help)) {
    const small = fs.existsSync(path.join(REPO_ROOT, "Pulumi.staging.yaml")) ? "staging" : "";
    cases.push([
      `bin/platform validate ${small}`,
      bin,
      ["validate", small].filter(Boolean),
      undefined,
    ]);
  }
  cases.push([
    "npm run platform -- --help",
    "npm",
    ["run", "--silent", "platform", "--", "--help"],
    0,
  ]);
  console.log(`\nCLI start-up, whole process, median of ${CLI_RUNS} runs:`);
  let floor = 0;
  for (const [label, command, args, code] of cases) {
    const ms = startup(command, args, code);
    if (floor === 0) floor = ms;
    console.log(`  ${label.padEnd(34)} ${pad(ms.toFixed(0), 6)} ms ${pad(ratio(ms, floor), 6)}×`);
  }
}

evaluation();
if (process.env.BENCH_CLI !== "0") cliStartup();
