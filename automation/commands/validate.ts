// `validate [env ...]`: the readiness report of every stack asked for (all of every layer by
// default), offline: no engine, no Pulumi CLI run beyond `pulumi version`, no Bitwarden, no cloud.
// Exit 0 only when each stack is ready to preview.
import { probePulumiCli } from "../cliProbe";
import type { CliContext } from "../context";
import { ExitCode, type ExitCodeValue, UserError } from "../errors";
import {
  type Layer,
  type LayerName,
  listEnvironments,
  misnamedStackFileError,
  misnamedStackFiles,
  requireEnvironment,
  resolveLayer,
  selectLayers,
  stackFileArgument,
} from "../layers";
import {
  type StackCheck,
  checkStack,
  validateStackConfig,
  formatReadiness,
  readinessExitCode,
} from "../readiness";

/** `validate` as asked. */
interface ValidateRequest {
  /** Environments to check; every one of the layers when empty. */
  readonly envs: readonly string[];
  readonly layer: LayerName | "all";
}

/**
 * One stack's readiness without the network: Bitwarden is not asked, so a credential counts when
 * the environment or the stack's secret config has it (what `validate` and `init` report).
 */
export function offlineCheck(ctx: CliContext, layer: Layer, env: string): StackCheck {
  return checkStack({
    repoRoot: ctx.repoRoot,
    layer,
    env,
    processEnv: ctx.env,
    bitwarden: "offline",
    validate: ctx.validateStack ?? validateStackConfig,
  });
}

/**
 * The stack name of an argument: a stack file's name (`Pulumi.dev.yaml`, what a shell completes) is
 * taken as its stack; a `.yml` one is refused with the rename, since Pulumi would never read it.
 */
function stackName(layers: readonly Layer[], argument: string): string {
  const file = stackFileArgument(argument);
  if (file === undefined) return argument;
  if (file.extension === "yml") {
    const layer = layers.find((candidate) =>
      misnamedStackFiles(candidate).includes(`Pulumi.${file.env}.yml`),
    );
    if (layer) throw misnamedStackFileError(layer, `Pulumi.${file.env}.yml`);
    throw new UserError({
      what: "environment",
      problem: "Pulumi reads only stack files named .yaml, and validate takes the stack name",
      got: JSON.stringify(argument),
      fix: `Rename the file to Pulumi.${file.env}.yaml and run: npm run platform -- validate ${file.env}`,
    });
  }
  return file.env;
}

/** The stacks a validate run checks, in layer order. */
function stacksToCheck(
  repoRoot: string,
  request: ValidateRequest,
): { layer: Layer; env: string }[] {
  const layers = selectLayers(repoRoot, request.layer).map((name) => resolveLayer(repoRoot, name));
  const envs = request.envs.map((argument) => stackName(layers, argument));
  if (request.layer !== "all") {
    for (const env of envs) requireEnvironment(layers[0], env);
  } else {
    const known = [...new Set(layers.flatMap(listEnvironments))].sort();
    const unknown = envs.filter((env) => !known.includes(env));
    // Only a Pulumi.<env>.yml of that name: the rename, not an init.
    for (const env of unknown) {
      const layer = layers.find((candidate) =>
        misnamedStackFiles(candidate).includes(`Pulumi.${env}.yml`),
      );
      if (layer) throw misnamedStackFileError(layer, `Pulumi.${env}.yml`);
    }
    if (unknown.length > 0) {
      throw new UserError({
        what: "environment",
        problem: `no stack file Pulumi.${unknown[0]}.yaml in any layer`,
        got: JSON.stringify(unknown.join(", ")),
        fix:
          known.length > 0
            ? `Use one of: ${known.join(", ")}; or create it: npm run platform -- init ${unknown[0]} --from <example> (examples/README.md)`
            : "Create a stack file first: npm run platform -- init <env> --from <example> (examples/README.md)",
      });
    }
  }
  return layers.flatMap((layer) =>
    listEnvironments(layer)
      .filter((env) => envs.length === 0 || envs.includes(env))
      .map((env) => ({ layer, env })),
  );
}

/** Runs `validate`: prints the report, returns 0 when every stack is ready to preview. */
export function validateStacks(ctx: CliContext, request: ValidateRequest): ExitCodeValue {
  const targets = stacksToCheck(ctx.repoRoot, request);
  // A Pulumi.<env>.yml among the files checked: meant as a stack, read by nothing.
  const ignored =
    request.envs.length > 0
      ? []
      : selectLayers(ctx.repoRoot, request.layer).flatMap((name) => {
          const layer = resolveLayer(ctx.repoRoot, name);
          return misnamedStackFiles(layer).map((file) => misnamedStackFileError(layer, file));
        });
  if (targets.length === 0 && ignored.length > 0) throw ignored[0];
  if (targets.length === 0) {
    throw new UserError({
      what: "validate",
      problem: "there is no stack file to check",
      got: `--layer ${request.layer}`,
      fix: "Create one first: npm run platform -- init <env> --from <example> (examples/README.md)",
    });
  }
  const checks: StackCheck[] = targets.map(({ layer, env }) => offlineCheck(ctx, layer, env));
  const cli = probePulumiCli(ctx.env);
  ctx.stdout.write(formatReadiness("validate", checks, cli));
  for (const error of ignored) ctx.stdout.write(`ignored: ${error.message}\n`);
  return ignored.length > 0 ? ExitCode.usage : readinessExitCode(checks, cli);
}
