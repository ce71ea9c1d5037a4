// The command line: `npm run platform -- <command> <env> [--layer bootstrap|foundation|app]`.
// Parses with commander and dispatches to the commands; every error becomes one message on stderr
// and an exit code (see ExitCode), never a stack trace. Each command's implementation is imported
// when it runs: `--help`, usage errors and the commands that need no engine never load the
// Automation API (about a second) or the programs.
import { Command, CommanderError, Option } from "commander";
import type { OperationRequest } from "./commands/operation";
import { CREDENTIAL_OUTPUTS } from "./commands/outputNames";
import type { CliContext } from "./context";
import { DAY_TWO_EXAMPLES, registerDayTwoCommands } from "./commands/dayTwo";
import { registerRolloutCommand, ROLLOUT_EXAMPLES } from "./commands/rollout";
import { ExitCode, type ExitCodeValue, reportError } from "./errors";
import type { Operation } from "./guards";
import { DEFAULT_LAYER, LAYER_CHOICES, LAYER_NAMES, type LayerName } from "./layerNames";

/** How the operator runs the CLI; used in usage lines and messages. */
export const INVOCATION = "npm run platform --";

const EXAMPLES = `
Examples:
  ${INVOCATION} stacks
  ${INVOCATION} preview staging --diff
  ${INVOCATION} preview prod --layer app --summary preview.md
  ${INVOCATION} up staging
  ${INVOCATION} up shared --layer bootstrap
  ${INVOCATION} refresh staging
  ${INVOCATION} outputs staging
  ${INVOCATION} kubeconfig staging --out ~/.kube/staging.yaml
  ${INVOCATION} talosconfig staging
  ${INVOCATION} destroy prod --yes-destroy-prod
${[...DAY_TWO_EXAMPLES, ...ROLLOUT_EXAMPLES].map((example) => `  ${INVOCATION} ${example}`).join("\n")}

Layers: bootstrap (bootstrap/), foundation (the repository root, default), app (app/);
--layer all runs every layer that exists (bootstrap, foundation, app; reversed for destroy).
Exit codes: 0 ok, 1 operation failed, 2 usage error, 3 refused by a guard, 4 stack locked,
5 Pulumi CLI (or talosctl) missing, 6 drift found, 130 interrupted.`;

interface LayerOption {
  layer: LayerName | "all";
}
interface CliOptions {
  installCli?: boolean;
}

function layerOption(allowAll: boolean, fallback: string = DEFAULT_LAYER): Option {
  return new Option("--layer <layer>", "the layer's Pulumi project")
    .choices(allowAll ? LAYER_CHOICES : LAYER_NAMES)
    .default(fallback);
}

function installCliOption(): Option {
  return new Option(
    "--install-cli",
    "install the Pulumi CLI into ~/.pulumi/versions/<sdk version> when it is missing",
  );
}

/** Builds the commander program; `done` receives the exit code of the command that ran. */
export function buildProgram(ctx: CliContext, done: (code: ExitCodeValue) => void): Command {
  const program = new Command("platform")
    .usage("<command> <env> [options]")
    .description(
      "Preview, deploy, refresh and destroy any layer of any environment with the Pulumi Automation API.",
    )
    .exitOverride()
    .configureOutput({
      writeOut: (text) => ctx.stdout.write(text),
      writeErr: (text) => ctx.stderr.write(text),
    })
    .showHelpAfterError(`(run \`${INVOCATION} --help\` for usage)`)
    .addHelpText("after", EXAMPLES);

  const engineCommand = (operation: Operation, description: string) =>
    program
      .command(operation)
      .description(description)
      .argument("<env>", "environment: the stack name (a Pulumi.<env>.yaml of the layer)")
      .addOption(layerOption(true))
      .addOption(installCliOption());
  const runEngine = (operation: Operation) => async (env: string, options: EngineOptions) => {
    const { runOperation } = await import("./commands/operation");
    done(await runOperation(ctx, operationRequest(operation, env, options)));
  };
  const skipMissingLayer = "succeed with a note when the layer has no Pulumi.yaml yet";

  engineCommand("preview", "show what up would change")
    .option("--diff", "show the property-level diff of every change")
    .option(
      "--summary <file>",
      "merge a Markdown summary for a pull request into <file> (several previews, one file)",
    )
    .option("--skip-missing-layer", skipMissingLayer)
    .action(runEngine("preview"));
  engineCommand("up", "create or update the stack's resources")
    .option("--skip-missing-layer", skipMissingLayer)
    .action(runEngine("up"));
  engineCommand("refresh", "read the real resources back into the state").action(
    runEngine("refresh"),
  );
  engineCommand("destroy", "delete every resource of the stack")
    .option("--yes-destroy-prod", "confirm destroying the prod environment")
    .action(runEngine("destroy"));

  program
    .command("outputs")
    .description("print the stack outputs; secrets show as [secret]")
    .argument("<env>", "environment")
    .addOption(layerOption(false))
    .addOption(installCliOption())
    .option(
      "--show-secrets",
      "show secret outputs too (kubeconfig and talosconfig still only through their commands)",
    )
    .option("--json", "print JSON instead of YAML")
    .action(
      async (
        env: string,
        options: { layer: LayerName } & CliOptions & { showSecrets?: boolean; json?: boolean },
      ) => {
        const { showOutputs } = await import("./commands/outputs");
        done(
          await showOutputs(ctx, {
            layer: options.layer,
            env,
            installCli: options.installCli === true,
            showSecrets: options.showSecrets === true,
            json: options.json === true,
          }),
        );
      },
    );

  for (const kind of CREDENTIAL_OUTPUTS) {
    program
      .command(kind)
      .description(
        `write the cluster's ${kind} to a file with mode 0600 and print its path (never its content)`,
      )
      .argument("<env>", "environment")
      .addOption(layerOption(false))
      .addOption(installCliOption())
      .option("--out <file>", `where to write it (default: ./<env>.${kind})`)
      .action(async (env: string, options: { layer: LayerName; out?: string } & CliOptions) => {
        const { writeCredential } = await import("./commands/outputs");
        done(
          await writeCredential(ctx, {
            kind,
            layer: options.layer,
            env,
            installCli: options.installCli === true,
            ...(options.out !== undefined ? { out: options.out } : {}),
          }),
        );
      });
  }

  program
    .command("stacks")
    .description("list the environments of each layer (from the Pulumi.<env>.yaml files)")
    .addOption(layerOption(true, "all"))
    .action(async (options: LayerOption) => {
      const { listStacks } = await import("./commands/stacks");
      done(listStacks(ctx, options.layer));
    });

  registerDayTwoCommands(program, ctx, done);
  registerRolloutCommand(program, ctx, done);

  return program;
}

/** The options of preview/up/refresh/destroy as commander parsed them (each command has a subset). */
interface EngineOptions extends LayerOption, CliOptions {
  diff?: boolean;
  summary?: string;
  skipMissingLayer?: boolean;
  yesDestroyProd?: boolean;
}

function operationRequest(
  operation: Operation,
  env: string,
  options: EngineOptions,
): OperationRequest {
  return {
    operation,
    layer: options.layer,
    env,
    installCli: options.installCli === true,
    yesDestroyProd: options.yesDestroyProd === true,
    diff: options.diff === true,
    ...(options.summary !== undefined ? { summaryFile: options.summary } : {}),
    skipMissingLayer: options.skipMissingLayer === true,
    commandLine: `${operation} ${env} --layer ${options.layer}`,
  };
}

/**
 * Runs the CLI with the arguments after `npm run platform --`; resolves to the exit code. Never
 * rejects: every error has been printed by then.
 */
export async function runCli(argv: readonly string[], ctx: CliContext): Promise<ExitCodeValue> {
  let code: ExitCodeValue = ExitCode.ok;
  const program = buildProgram(ctx, (result) => {
    code = result;
  });
  try {
    await program.parseAsync([...argv], { from: "user" });
    return code;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version exit 0; every parse error is a usage error.
      return error.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
    }
    return reportError(error, ctx.stderr, ctx.env.PLATFORM_DEBUG !== undefined);
  }
}
