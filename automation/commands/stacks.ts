// `stacks`: the environments of each layer, read from the stack files (no Pulumi CLI needed), with
// the backend and secrets provider each would use and why.
import { chooseBackend, chooseSecretsProvider } from "../backend";
import type { CliContext } from "../context";
import { ExitCode, type ExitCodeValue, UserError } from "../errors";
import {
  LAYER_NAMES,
  type LayerName,
  layerDisplayDir,
  layerExists,
  layerProjectFile,
  listEnvironments,
  misnamedStackFiles,
  readStackFile,
  resolveLayer,
} from "../layers";

/** Lists environments of one layer, or of every layer (`all`, noting the missing ones). */
export function listStacks(ctx: CliContext, choice: LayerName | "all"): ExitCodeValue {
  const names = choice === "all" ? LAYER_NAMES : [choice];
  const lines: string[] = [];
  const broken: string[] = [];
  for (const name of names) {
    if (choice === "all" && !layerExists(ctx.repoRoot, name)) {
      lines.push(`${name}: no ${layerProjectFile(name)} yet`);
      continue;
    }
    const layer = resolveLayer(ctx.repoRoot, name);
    const envs = listEnvironments(layer);
    lines.push(`${name}: project ${layer.project} in ${layerDisplayDir(name)}`);
    if (envs.length === 0) lines.push("  (no Pulumi.<env>.yaml yet)");
    const width = Math.max(0, ...envs.map((env) => env.length));
    for (const env of envs) {
      // One unreadable file (its YAML, its backend key) is reported in its line; the rest are listed.
      try {
        const stackFile = readStackFile(layer, env);
        const backend = chooseBackend({ env: ctx.env, layer, stackFile, repoRoot: ctx.repoRoot });
        const secrets = chooseSecretsProvider(stackFile);
        lines.push(
          `  ${env.padEnd(width)}  backend ${backend.url} (${backend.source}); secrets ${secrets.provider} (${secrets.source})`,
        );
      } catch (error) {
        if (!(error instanceof UserError)) throw error;
        broken.push(error.message);
        lines.push(`  ${env.padEnd(width)}  not listed: ${error.message}`);
      }
    }
    for (const file of misnamedStackFiles(layer)) {
      lines.push(`  ${file}: ignored by Pulumi (it reads .yaml); rename it to .yaml`);
    }
  }
  ctx.stdout.write(`${lines.join("\n")}\n`);
  if (broken.length === 0) return ExitCode.ok;
  ctx.stderr.write(
    `stacks: ${broken.length} stack file${broken.length === 1 ? "" : "s"} could not be read (above); fix ${broken.length === 1 ? "it" : "them"} (npm run platform -- validate says more)\n`,
  );
  return ExitCode.usage;
}
