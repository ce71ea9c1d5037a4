// One measured run in a fresh process: `worker.ts <program|baseline> <compiled|ts-node> <nodes>`;
// prints one JSON line.
import * as path from "node:path";
import { performance } from "node:perf_hooks";
import { REPO_ROOT } from "../components/repo/root";
import { resolveAll, setupRun } from "../test/harness";
import { generateStack } from "./generate";

async function main(): Promise<void> {
  const [mode, runtime, sizeText] = process.argv.slice(2);
  const size = Number(sizeText);
  const stack = generateStack(size);
  const recorder = await setupRun(stack, { stack: "bench" });
  // Only what the mode runs is loaded: neither side pays for (or is changed by) the other's modules.
  let run: () => unknown;
  if (mode === "baseline") {
    const { baseline } = await import("./baseline");
    run = () => baseline(stack);
  } else {
    // The project's entry, as Pulumi runs it: the compiled dist/index.js, or index.ts itself.
    const entry = runtime === "compiled" ? path.join(REPO_ROOT, "dist", "index.js") : "../index";
    run = ((await import(entry)) as { default: () => unknown }).default;
  }
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  const result = await run();
  await resolveAll(result);
  await recorder.settled();
  const ms = performance.now() - started;
  // CPU time (all threads: the program's and the garbage collector's): steadier than wall time on
  // a busy machine.
  const cpu = process.cpuUsage(cpuBefore);
  const cpuMs = (cpu.user + cpu.system) / 1000;
  const maxRssMiB = process.resourceUsage().maxRSS / 1024;
  console.log(
    JSON.stringify({
      mode,
      size,
      ms,
      cpuMs,
      maxRssMiB,
      resources: recorder.resources.length,
      invokes: recorder.invokes.length,
    }),
  );
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
