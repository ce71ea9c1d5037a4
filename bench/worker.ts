// One measured run in a fresh process: `worker.ts <program|baseline> <nodes>`; prints one JSON line.
import { performance } from "node:perf_hooks";
import { resolveAll, setupRun } from "../test/harness";
import { baseline } from "./baseline";
import { generateStack } from "./generate";

async function main(): Promise<void> {
  const [mode, sizeText] = process.argv.slice(2);
  const size = Number(sizeText);
  const stack = generateStack(size);
  const recorder = await setupRun(stack, { stack: "bench" });
  const { foundation } = await import("../components/foundation");
  const started = performance.now();
  const result = mode === "baseline" ? baseline(stack) : foundation();
  await resolveAll(result);
  await recorder.settled();
  const ms = performance.now() - started;
  const maxRssMiB = process.resourceUsage().maxRSS / 1024;
  console.log(
    JSON.stringify({
      mode,
      size,
      ms,
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
