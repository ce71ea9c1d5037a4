// The engine tier's harness: the tools scripts/engine-tools.sh built (env.json), a throwaway copy
// of the repository with the test stack, a file:// backend and a passphrase in a temporary folder,
// and the project's own CLI run in this process (its real Automation API and Pulumi CLI) with every
// engine event it sees recorded, or as `npm run platform` in a child process.
import type { EngineEvent } from "@pulumi/pulumi/automation";
import { execFileSync, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { runCli } from "../../automation/cli";
import type { CliContext } from "../../automation/context";
import { withholdShellCredentials } from "../../automation/credentials";
import { processIsAlive } from "../../automation/lock";
import { type StackOperations, localWorkspaceFactory } from "../../automation/workspace";
import { RUN_SECRETS_FILE_ENV } from "../../components/config/runSecretsEnv";
import { MemorySink } from "../automation/helpers";

/** The repository this test runs from. */
export const ROOT = path.resolve(__dirname, "..", "..");

/** What scripts/engine-tools.sh chose and built. */
export interface EngineTools {
  readonly bin: string;
  readonly home: string;
  readonly pulumiVersion: string;
  readonly pulumiSource: "user" | "built";
  readonly pluginSource: "user" | "stand-in";
  readonly sdkVersion: string;
  readonly talosVersion: string;
}

/** Reads .engine-tools/env.json; the tier cannot run without it. */
export function engineTools(): EngineTools {
  const dir = process.env.ENGINE_TOOLS_DIR ?? path.join(ROOT, ".engine-tools");
  const file = path.join(dir, "env.json");
  if (!fs.existsSync(file)) {
    throw new Error(`${file} is missing: run the engine tier with \`npm run test:engine\``);
  }
  return JSON.parse(fs.readFileSync(file, "utf8")) as EngineTools;
}

/** One CLI run: exit code, what it printed, and the engine events it received. */
export interface CliRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  readonly events: EngineEvent[];
}

/** A throwaway repository with its own backend, passphrase and Pulumi home. */
export class EngineSandbox {
  readonly dir: string;
  readonly repo: string;
  readonly stateDir: string;
  readonly passphrase = randomBytes(24).toString("base64url");
  readonly env: Record<string, string>;

  constructor(readonly tools: EngineTools) {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), "engine-tier-"));
    this.repo = path.join(this.dir, "repo");
    this.stateDir = path.join(this.dir, "state");
    fs.mkdirSync(this.stateDir);
    copyRepository(ROOT, this.repo);
    const env: Record<string, string> = {};
    for (const [key, value] of Object.entries(process.env)) {
      // The tier runs as an operator at a workstation: no CI guard, no credentials of the machine.
      if (value !== undefined && key !== "CI" && !/^(PULUMI_|BWS_|FLUX_|GOOGLE_)/.test(key)) {
        env[key] = value;
      }
    }
    Object.assign(env, {
      PATH: `${tools.bin}${path.delimiter}${process.env.PATH ?? ""}`,
      PULUMI_HOME: tools.home,
      PULUMI_BACKEND_URL: `file://${this.stateDir}`,
      PULUMI_CONFIG_PASSPHRASE: this.passphrase,
      PULUMI_SKIP_UPDATE_CHECK: "true",
      // Only the plugins installed in PULUMI_HOME: nothing is downloaded from GitHub.
      PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
      // The stand-in provider gives up on an unreachable node after this (the real one: the timeout).
      TALOS_STANDIN_RETRY_WINDOW: "2s",
    });
    this.env = env;
  }

  /** Writes a stack file of a layer folder (relative to the repository copy). */
  writeStack(layerDir: string, env: string, text: string): string {
    const file = path.join(this.repo, layerDir, `Pulumi.${env}.yaml`);
    fs.writeFileSync(file, text);
    return file;
  }

  /** Writes the foundation stack file `stack` from its fixture, test/engine/stacks/Pulumi.<stack>.yaml. */
  writeFixtureStack(stack: string): string {
    const fixture = path.join(__dirname, "stacks", `Pulumi.${stack}.yaml`);
    return this.writeStack(".", stack, fs.readFileSync(fixture, "utf8"));
  }

  /**
   * Runs the project's CLI in this process with the sandbox's environment, as `npm run platform --
   * <argv>` would, recording every engine event it receives. `stdout` also receives what it prints
   * as it prints it (the engine benchmark times the progress lines).
   */
  async cli(
    argv: readonly string[],
    extraEnv: Record<string, string> = {},
    tee?: { readonly stdout?: (text: string) => void },
  ): Promise<CliRun> {
    const env = { ...this.env, ...extraEnv };
    const events: EngineEvent[] = [];
    const saved = { ...process.env };
    // The Automation API hands process.env to the Pulumi CLI it spawns; the CLI takes the shell's
    // credential variables out of it, as automation/main.ts does.
    replaceEnv(env);
    const cliEnv = withholdShellCredentials(process.env);
    const stdout = new MemorySink();
    if (tee?.stdout) {
      const write = stdout.write.bind(stdout);
      const forward = tee.stdout;
      stdout.write = (text: string) => {
        write(text);
        forward(text);
      };
    }
    const stderr = new MemorySink();
    const factory = localWorkspaceFactory({ homeDir: this.dir });
    const ctx: CliContext = {
      repoRoot: this.repo,
      cwd: this.repo,
      env: cliEnv,
      stdout,
      stderr,
      clock: Date.now,
      host: { pid: process.pid, hostname: os.hostname(), isAlive: processIsAlive },
      workspaces: {
        ensureCli: (options) => factory.ensureCli(options),
        openStack: async (request) => recording(await factory.openStack(request), events),
      },
    };
    try {
      const code = await runCli(argv, ctx);
      return { code, stdout: stdout.text, stderr: stderr.text, events };
    } finally {
      replaceEnv(saved);
    }
  }

  /** Runs `npm run platform -- <argv>` in a child process, as an operator types it. */
  npmPlatform(argv: readonly string[], extraEnv: Record<string, string> = {}): CliRun {
    const result = spawnSync("npm", ["run", "--silent", "platform", "--", ...argv], {
      cwd: this.repo,
      env: { ...this.env, ...extraEnv },
      encoding: "utf8",
      timeout: 10 * 60_000,
    });
    return {
      code: result.status ?? -1,
      stdout: result.stdout,
      stderr: result.stderr,
      events: [],
    };
  }

  /** Runs the Pulumi CLI itself in a layer folder of the copy. */
  pulumi(
    args: readonly string[],
    layerDir = ".",
  ): { code: number; stdout: string; stderr: string } {
    const result = spawnSync(path.join(this.tools.bin, "pulumi"), [...args, "--non-interactive"], {
      cwd: path.join(this.repo, layerDir),
      env: this.env,
      encoding: "utf8",
      timeout: 5 * 60_000,
    });
    return { code: result.status ?? -1, stdout: result.stdout, stderr: result.stderr };
  }

  /** The raw checkpoint of a stack in the file backend. */
  stateFile(project: string, stack: string): string {
    return path.join(this.stateDir, ".pulumi", "stacks", project, `${stack}.json`);
  }

  /** Every lock the engine holds in the file backend. */
  engineLocks(): string[] {
    const dir = path.join(this.stateDir, ".pulumi", "locks");
    if (!fs.existsSync(dir)) return [];
    return fs
      .readdirSync(dir, { recursive: true, encoding: "utf8" })
      .filter((f) => f.endsWith(".json"));
  }

  /**
   * Watches the file backend while `run` goes on, polling every 50 ms: every file that appears or
   * changes, relative to the backend's root, the engine's short-lived lock included (it is held for
   * the whole update). The poll stops with `run`.
   */
  async backendWrites<T>(run: () => Promise<T>): Promise<{ result: T; written: string[] }> {
    const seen = new Map<string, number>();
    const snapshot = (): Map<string, number> => {
      const files = new Map<string, number>();
      for (const name of fs.readdirSync(this.stateDir, { recursive: true, encoding: "utf8" })) {
        try {
          const stat = fs.statSync(path.join(this.stateDir, name));
          if (stat.isFile()) files.set(name.split(path.sep).join("/"), stat.mtimeMs);
        } catch {
          // Gone between the listing and the stat (a lock released, a temp file renamed).
        }
      }
      return files;
    };
    const before = snapshot();
    const written = new Set<string>();
    const poll = (): void => {
      for (const [name, mtime] of snapshot()) {
        if (before.get(name) !== mtime && seen.get(name) !== mtime) written.add(name);
        seen.set(name, mtime);
      }
    };
    const timer = setInterval(poll, 50);
    try {
      const result = await run();
      poll();
      return { result, written: [...written].sort() };
    } finally {
      clearInterval(timer);
    }
  }

  /**
   * Watches every process of this machine while `run` goes on (Linux /proc, polled every 50 ms):
   * those, other than this test's own, whose environment holds `secret`, and, for each provider
   * plugin (`pulumi-resource-*`), whether the credentials file its environment names still existed
   * while it ran. The poll stops with `run`.
   */
  static async processEnvironments<T>(
    secret: string,
    run: () => Promise<T>,
  ): Promise<{ result: T; holders: string[]; plugins: string[]; pluginsFoundFile: string[] }> {
    const holders = new Set<string>();
    const plugins = new Set<string>();
    const pluginsFoundFile = new Set<string>();
    const poll = (): void => {
      for (const pid of fs.readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
        if (Number(pid) === process.pid) continue;
        let environ: string;
        let command: string;
        try {
          environ = fs.readFileSync(`/proc/${pid}/environ`, "utf8");
          command = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")[0];
        } catch {
          continue; // gone, or another user's
        }
        const name = path.basename(command);
        const holding = environ.split("\0").filter((entry) => entry.includes(secret));
        for (const entry of holding) holders.add(`${name} ${entry.slice(0, entry.indexOf("="))}`);
        if (!name.startsWith("pulumi-resource-")) continue;
        plugins.add(name);
        const file = environ
          .split("\0")
          .find((entry) => entry.startsWith(`${RUN_SECRETS_FILE_ENV}=`))
          ?.slice(RUN_SECRETS_FILE_ENV.length + 1);
        if (file && fs.existsSync(file)) pluginsFoundFile.add(name);
      }
    };
    const timer = setInterval(poll, 50);
    try {
      const result = await run();
      return {
        result,
        holders: [...holders],
        plugins: [...plugins],
        pluginsFoundFile: [...pluginsFoundFile],
      };
    } finally {
      clearInterval(timer);
    }
  }

  /** The CLI's own per-stack leases: beside the state in the backend, and in the checkout. */
  cliLocks(): string[] {
    return [
      path.join(this.stateDir, ".platform-locks"),
      path.join(this.repo, ".pulumi-state", "locks"),
    ]
      .filter((dir) => fs.existsSync(dir))
      .flatMap((dir) => fs.readdirSync(dir, { recursive: true, encoding: "utf8" }))
      .filter((file) => file.endsWith(".lock"));
  }

  remove(): void {
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

function replaceEnv(env: Record<string, string | undefined>): void {
  for (const key of Object.keys(process.env)) if (!(key in env)) delete process.env[key];
  for (const [key, value] of Object.entries(env)) {
    if (value !== undefined) process.env[key] = value;
  }
}

/** Tees every event an operation receives into `events`. */
function recording(stack: StackOperations, events: EngineEvent[]): StackOperations {
  const tee = <O extends { onEvent: (event: EngineEvent) => void }>(options: O): O => ({
    ...options,
    onEvent: (event: EngineEvent) => {
      events.push(event);
      options.onEvent(event);
    },
  });
  return {
    // Every other method as it is (the adapter is a plain object of functions).
    ...stack,
    preview: (options) => stack.preview(tee(options)),
    up: (options) => stack.up(tee(options)),
    refresh: (options) => stack.refresh(tee(options)),
    destroy: (options) => stack.destroy(tee(options)),
  };
}

/**
 * Copies the repository's files (tracked and new, not ignored) and links its node_modules, so the
 * engine works on the same program without touching the checkout's stack files or state.
 */
function copyRepository(from: string, to: string): void {
  const files = execFileSync(
    "git",
    ["ls-files", "-z", "--cached", "--others", "--exclude-standard"],
    {
      cwd: from,
      encoding: "utf8",
    },
  )
    .split("\0")
    .filter((f) => f !== "" && !f.startsWith("test/engine/tools/"));
  for (const file of files) {
    const source = path.join(from, file);
    if (!fs.existsSync(source)) continue;
    const target = path.join(to, file);
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.copyFileSync(source, target);
  }
  linkNodeModules(path.join(from, "node_modules"), path.join(to, "node_modules"), to);
}

/**
 * Links the checkout's node_modules into the copy entry by entry, except the local Talos SDK
 * (`file:sdks/talos`, a link to ../../sdks/talos), which resolves to the copy's own sdks/talos:
 * the copy's programs compile it there when they start (scripts/build.js), so the engine tier works
 * on a checkout that was never built.
 */
function linkNodeModules(from: string, to: string, repo: string): void {
  fs.mkdirSync(to);
  for (const entry of fs.readdirSync(from)) {
    if (entry !== "@pulumiverse") {
      fs.symlinkSync(path.join(from, entry), path.join(to, entry));
      continue;
    }
    fs.mkdirSync(path.join(to, entry));
    for (const pkg of fs.readdirSync(path.join(from, entry))) {
      const target =
        pkg === "talos" ? path.join(repo, "sdks", "talos") : path.join(from, entry, pkg);
      fs.symlinkSync(target, path.join(to, entry, pkg), "dir");
    }
  }
}
