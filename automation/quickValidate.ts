// `validate` as typed most of the time (`validate`, `validate staging prod`, `validate dev --layer
// app`) runs without loading the command-line parser: commander is ES modules only, and loading it
// (with Node.js's ES module loader) costs about as much as the rest of the CLI's start. Any other
// command line, including every `validate` with another option, `--help` or a value commander would
// refuse, goes through commander (automation/cli.ts), which then runs the same `runValidate`.
import { type ExitCodeValue, reportError } from "./errors";
import { LAYER_CHOICES, type LayerName } from "./layerNames";
import type { CliContext } from "./context";
import { loadPack, loadPackedPackages } from "./packedModules";
import * as path from "node:path";

/** `validate` as asked (automation/commands/validate.ts's ValidateRequest). */
export interface PlainValidateRequest {
  readonly envs: string[];
  readonly layer: LayerName | "all";
}

/** An environment name as commander would pass it on: a plain word, never an option or `help`. */
const ENV_WORD = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/**
 * The request of a command line that is `validate`, then environment names and at most one
 * `--layer <layer>` (or `--layer=<layer>`) with a valid layer; undefined for any other command line,
 * which commander parses. For the command lines it accepts, the result is what commander hands the
 * validate action (a test checks the two agree).
 */
export function plainValidateRequest(argv: readonly string[]): PlainValidateRequest | undefined {
  if (argv[0] !== "validate") return undefined;
  const envs: string[] = [];
  let layer: string | undefined;
  for (let i = 1; i < argv.length; i++) {
    const word = argv[i];
    let value: string | undefined;
    if (word === "--layer") value = argv[++i];
    else if (word.startsWith("--layer=")) value = word.slice("--layer=".length);
    else if (ENV_WORD.test(word) && word !== "help") {
      envs.push(word);
      continue;
    } else return undefined;
    if (layer !== undefined || value === undefined) return undefined;
    if (!(LAYER_CHOICES as readonly string[]).includes(value)) return undefined;
    layer = value;
  }
  return { envs, layer: (layer ?? "all") as LayerName | "all" };
}

/**
 * Before `validate` loads its checks: the modules come from packs, one file each for zod, yaml and
 * the command's own compiled modules instead of about 240 files (automation/packedModules.ts); zod
 * runs without its JIT, which compiles each object schema's fast path with `new Function` on its
 * first parse: that pays off over many parses (the programs keep it; they run in their own
 * process), not over one. The results are the same either way. Set before any schema is built: a
 * schema reads the setting when it is built.
 */
async function prepareOneShotChecks(): Promise<void> {
  loadPackedPackages(["zod", "yaml"]);
  const { z } = await import("zod");
  z.config({ jitless: true });
  loadPack("validate", require.resolve("./commands/validate"), path.resolve(__dirname, ".."));
}

/**
 * Runs `validate` and resolves to its exit code; every error is reported as the CLI reports it
 * (automation/errors.ts), so this never rejects.
 */
export async function runValidate(
  ctx: CliContext,
  request: PlainValidateRequest,
): Promise<ExitCodeValue> {
  try {
    await prepareOneShotChecks();
    const { validateStacks } = await import("./commands/validate");
    return validateStacks(ctx, request);
  } catch (error) {
    return reportError(error, ctx.stderr, ctx.env.PLATFORM_DEBUG !== undefined);
  }
}
