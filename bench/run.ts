// `npm run bench`: evaluates the foundation program under mocks for 3, 30, 300 and 1000 nodes next to
// a baseline that registers the same resources with plain SDK calls, each run in its own process.
// Prints figures; asserts nothing.
import { execFileSync } from "node:child_process";
import * as path from "node:path";

const SIZES = (process.env.BENCH_SIZES ?? "3,30,300,1000").split(",").map(Number);
// Three runs per cell, one at 1000 nodes (each of those takes over a minute under the mock engine).
const repeatsFor = (size: number) => Number(process.env.BENCH_REPEATS ?? (size >= 1000 ? 1 : 3));

interface Sample {
  ms: number;
  maxRssMiB: number;
  resources: number;
  invokes: number;
}

function measure(mode: "program" | "baseline", size: number): Sample {
  const worker = path.join(__dirname, "worker.ts");
  const out = execFileSync(
    process.execPath,
    ["-r", "ts-node/register/transpile-only", worker, mode, String(size)],
    {
      encoding: "utf8",
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  return JSON.parse(out.trim().split("\n").pop()!) as Sample;
}

/** The median run by time, with the largest peak memory seen. */
function best(mode: "program" | "baseline", size: number): Sample {
  const samples = Array.from({ length: repeatsFor(size) }, () => measure(mode, size)).sort(
    (a, b) => a.ms - b.ms,
  );
  const median = samples[Math.floor(samples.length / 2)];
  return { ...median, maxRssMiB: Math.max(...samples.map((s) => s.maxRssMiB)) };
}

const pad = (text: string | number, width: number) => String(text).padStart(width);
console.log(
  `node ${process.version}; median of ${repeatsFor(3)} runs per cell (1 at 1000 nodes); peak RSS of the run's process`,
);
console.log(
  `${pad("nodes", 6)} ${pad("resources", 10)} ${pad("baseline res", 13)} ${pad("program ms", 11)} ${pad("baseline ms", 12)} ${pad("ratio", 6)} ${pad("program MiB", 12)} ${pad("baseline MiB", 13)}`,
);
for (const size of SIZES) {
  const program = best("program", size);
  const base = best("baseline", size);
  console.log(
    `${pad(size, 6)} ${pad(program.resources, 10)} ${pad(base.resources, 13)} ${pad(program.ms.toFixed(0), 11)} ${pad(base.ms.toFixed(0), 12)} ${pad((program.ms / base.ms).toFixed(2), 6)} ${pad(program.maxRssMiB.toFixed(0), 12)} ${pad(base.maxRssMiB.toFixed(0), 13)}`,
  );
}
