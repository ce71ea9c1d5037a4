// The command line: `npm run platform -- <command> <env> [--layer bootstrap|foundation|app]`.
// Parses with commander and dispatches to the commands; every error becomes one message on stderr
// and an exit code (see ExitCode), never a stack trace. Each command's implementation is imported
// when it runs: `--help`, usage errors and the commands that need no engine never load the
// Automation API (about a second) or the programs.
import { Command, CommanderError, Option } from "commander";
import * as fs from "node:fs";
import * as path from "node:path";
import type { OperationRequest } from "./commands/operation";
import { CREDENTIAL_OUTPUTS } from "./commands/outputNames";
import type { CliContext } from "./context";
import { DAY_TWO_EXAMPLES, registerDayTwoCommands } from "./commands/dayTwo";
import { ExitCode, type ExitCodeValue, UserError, reportError } from "./errors";
import type { Operation } from "./guards";
import { Redactor } from "./redaction";
import { DEFAULT_LAYER, LAYER_CHOICES, LAYER_NAMES, type LayerName } from "./layerNames";

/** How the operator runs the CLI; used in usage lines and messages. */
const INVOCATION = "npm run platform --";

const EXAMPLES = `
Examples:
  ${INVOCATION} init dev --from proxmox-vm
  ${INVOCATION} validate
  ${INVOCATION} validate dev --layer foundation
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
${DAY_TWO_EXAMPLES.map((example) => `  ${INVOCATION} ${example}`).join("\n")}

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
    // Our own "did you mean" (unknownCommandHint) also knows the words people use for our commands.
    .showSuggestionAfterError(false)
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
    .addOption(
      new Option(
        "--summary <file>",
        "merge a Markdown summary for a pull request into <file> (several previews, one file)",
      ).argParser(summaryFileArgument(ctx)),
    )
    .option("--skip-missing-layer", skipMissingLayer)
    .action(runEngine("preview"));
  engineCommand("up", "create or update the stack's resources")
    .option("--skip-missing-layer", skipMissingLayer)
    .option(
      "--allow-single-control-plane",
      "let a control-plane removal leave one control plane (etcd and the API down on its every reboot)",
    )
    .option(
      "--no-rollout",
      "leave the config changes the run staged (they need a reboot) for a later `rollout`",
    )
    .option(
      "--allow-manifest-overwrite",
      "let a Kubernetes upgrade's upgrade-k8s overwrite live objects of the bootstrap manifests with the config's (its dry run lists them)",
    )
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
      .option("--force", "replace an existing file that holds other content")
      .action(
        async (
          env: string,
          options: { layer: LayerName; out?: string; force?: boolean } & CliOptions,
        ) => {
          const { writeCredential } = await import("./commands/outputs");
          done(
            await writeCredential(ctx, {
              kind,
              layer: options.layer,
              env,
              installCli: options.installCli === true,
              ...(options.out !== undefined ? { out: options.out } : {}),
              force: options.force === true,
            }),
          );
        },
      );
  }

  program
    .command("stacks")
    .description("list the environments of each layer (from the Pulumi.<env>.yaml files)")
    .addOption(layerOption(true, "all"))
    .action(async (options: LayerOption) => {
      const { listStacks } = await import("./commands/stacks");
      done(listStacks(ctx, options.layer));
    });

  program
    .command("validate")
    .description(
      "check stack files, credentials and the Pulumi CLI offline, every problem at once; exit 0 when ready to preview, 2 with problems, 5 when only the Pulumi CLI is missing",
    )
    .argument("[env...]", "environments to check (default: every stack file of the layers)")
    .addOption(layerOption(true, "all"))
    .action(async (envs: string[], options: LayerOption) => {
      const { validateStacks } = await import("./commands/validate");
      done(await validateStacks(ctx, { envs, layer: options.layer }));
    });

  program
    .command("init")
    .description(
      "create the stack on its backend with its secrets provider (from an example with --from), then say what is still missing",
    )
    .argument("<env>", "environment: the stack name, Pulumi.<env>.yaml")
    .addOption(layerOption(false))
    .option("--from <example>", "first write Pulumi.<env>.yaml from examples/Pulumi.<example>.yaml")
    .addOption(installCliOption())
    .action(async (env: string, options: { layer: LayerName; from?: string } & CliOptions) => {
      const { initStack } = await import("./commands/init");
      done(
        await initStack(ctx, {
          env,
          layer: options.layer,
          installCli: options.installCli === true,
          ...(options.from !== undefined ? { from: options.from } : {}),
        }),
      );
    });

  registerDayTwoCommands(program, ctx, done);
  pointAtOwnHelp(program, []);

  return program;
}

/** `--summary` names a file to write: a folder there is a usage error before anything runs. */
function summaryFileArgument(ctx: CliContext): (value: string) => string {
  return (value) => {
    const file = path.resolve(ctx.cwd, value);
    if (fs.existsSync(file) && fs.statSync(file).isDirectory()) {
      throw new UserError({
        what: "--summary",
        problem: "must name a file, not a folder",
        got: JSON.stringify(file),
        fix: `Name a file in it, e.g. --summary ${path.join(value, "preview.md")}`,
      });
    }
    return value;
  };
}

/** Each command's usage errors point at its own --help (`upgrade talos --help`), not the program's. */
function pointAtOwnHelp(command: Command, names: readonly string[]): void {
  for (const sub of command.commands) {
    const full = [...names, sub.name()];
    sub.showHelpAfterError(`(run \`${INVOCATION} ${full.join(" ")} --help\` for usage)`);
    pointAtOwnHelp(sub, full);
  }
}

/** Commands people try that mean one of ours. */
const MEANT: Readonly<Record<string, string>> = {
  deploy: "up",
  apply: "up",
  plan: "preview",
  diff: "preview",
  delete: "destroy",
  down: "destroy",
  list: "stacks",
  ls: "stacks",
  check: "validate",
  lint: "validate",
  new: "init",
  create: "init",
  "etcd backup": "etcd snapshot",
  "etcd save": "etcd snapshot",
  "etcd recover": "etcd restore",
  "upgrade k8s": "upgrade kubernetes",
};

/** Levenshtein distance, for "did you mean" on a mistyped command. */
function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        previous[j] + 1,
        current[j - 1] + 1,
        previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    previous = current;
  }
  return previous[b.length];
}

/**
 * A hint for an unknown command: the command meant (`etcd backup` → `etcd snapshot`, a typo → the
 * closest name), or for `upgrade <env>` the missing word (`upgrade talos <env>`).
 */
function unknownCommandHint(program: Command, argv: readonly string[]): string | undefined {
  let command = program;
  const path: string[] = [];
  let index = 0;
  for (; index < argv.length; index++) {
    const word = argv[index];
    if (word.startsWith("-")) continue;
    const sub = command.commands.find((c) => c.name() === word || c.aliases().includes(word));
    if (!sub) break;
    command = sub;
    path.push(word);
  }
  const unknown = argv[index];
  if (unknown === undefined) return undefined;
  const rest = argv.slice(index + 1);
  const suggest = (words: string) =>
    `did you mean \`${INVOCATION} ${[words, ...rest].join(" ")}\`?`;
  const meant = MEANT[[...path, unknown].join(" ")];
  if (meant) return suggest(meant);
  const names = command.commands.map((c) => c.name());
  const close = names
    .map((name) => ({ name, d: distance(unknown.toLowerCase(), name) }))
    .filter(({ d }) => d <= 2)
    .sort((x, y) => x.d - y.d)[0];
  if (close) return suggest([...path, close.name].join(" "));
  if (path.join(" ") === "upgrade") {
    // `upgrade staging …`: the environment came where talos or kubernetes belongs.
    const args = [unknown, ...rest].join(" ");
    const to = rest[rest.indexOf("--to") + 1];
    const talos = `\`${INVOCATION} upgrade talos ${args}${to ? "" : " --to vX.Y.Z"}\``;
    const kubernetes = `\`${INVOCATION} upgrade kubernetes ${args}${to ? "" : " --to X.Y.Z"}\``;
    if (to === undefined || rest.indexOf("--to") < 0) {
      return `upgrade needs what to upgrade first: ${talos} or ${kubernetes}`;
    }
    return `upgrade needs what to upgrade first: ${to.startsWith("v") ? talos : kubernetes}`;
  }
  return names.length > 0
    ? `${[INVOCATION, ...path].join(" ")} takes one of: ${names.join(", ")}`
    : undefined;
}

/** The options of preview/up/refresh/destroy as commander parsed them (each command has a subset). */
interface EngineOptions extends LayerOption, CliOptions {
  diff?: boolean;
  summary?: string;
  skipMissingLayer?: boolean;
  yesDestroyProd?: boolean;
  allowSingleControlPlane?: boolean;
  /** commander's --no-rollout: false when given. */
  rollout?: boolean;
  allowManifestOverwrite?: boolean;
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
    allowSingleControlPlane: options.allowSingleControlPlane === true,
    noRollout: options.rollout === false,
    allowManifestOverwrite: options.allowManifestOverwrite === true,
    commandLine: `${operation} ${env} --layer ${options.layer}`,
  };
}

/**
 * An argument with a control character (an escape sequence, a newline) is refused before anything
 * echoes it: printed raw, it would rewrite the operator's terminal or forge lines in a CI log.
 */
function refuseControlCharacters(argv: readonly string[]): void {
  const bad = argv.find((arg) => /[\u0000-\u001f\u007f-\u009f]/.test(arg));
  if (bad === undefined) return;
  throw new UserError({
    what: "command line",
    problem: "an argument holds a control character",
    got: JSON.stringify(bad).replace(
      /[\u007f-\u009f]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
    ),
    fix: "Type the environment name and the other arguments in printable characters",
  });
}

/**
 * The context with the run's credential values replaced in everything it prints: the values in the
 * environment now, those found later (Bitwarden, the CI job's OIDC token) as they are found.
 */
function redactedContext(ctx: CliContext): CliContext {
  const redactor = ctx.redactor ?? new Redactor();
  redactor.addEnvironment(ctx.env);
  return {
    ...ctx,
    redactor,
    stdout: redactor.wrap(ctx.stdout),
    stderr: redactor.wrap(ctx.stderr),
  };
}

/**
 * Runs the CLI with the arguments after `npm run platform --`; resolves to the exit code. Never
 * rejects: every error has been printed by then.
 */
export async function runCli(argv: readonly string[], given: CliContext): Promise<ExitCodeValue> {
  const ctx = redactedContext(given);
  let code: ExitCodeValue = ExitCode.ok;
  const program = buildProgram(ctx, (result) => {
    code = result;
  });
  try {
    refuseControlCharacters(argv);
    await program.parseAsync([...argv], { from: "user" });
    return code;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === "commander.unknownCommand") {
        const hint = unknownCommandHint(program, argv);
        if (hint) ctx.stderr.write(`hint: ${hint}\n`);
      }
      // Help and version exit 0; every parse error is a usage error.
      return error.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
    }
    return reportError(error, ctx.stderr, ctx.env.PLATFORM_DEBUG !== undefined);
  }
}
