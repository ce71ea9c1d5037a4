// Running the CLI the way an operator does: a new process with the real argv, environment, exit
// code and streams (bin/platform, what `npm run platform` execs: the compiled automation/main.ts),
// and tools to give it a controlled PATH.
import { spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { CREDENTIALS } from "../../automation/credentials";
import { ROOT } from "./helpers";

/** What a CLI process left behind. */
export interface ProcessResult {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** The CLI's bin as a process runs it: the Node.js running the tests, then bin/platform. */
const CLI = [path.join(ROOT, "bin", "platform")];

/** Runs `npm run platform -- <args>` as a process (without npm, which adds its own lines). */
export function runCliProcess(
  args: readonly string[],
  env: Readonly<Record<string, string>>,
  cwd = ROOT,
): ProcessResult {
  const result = spawnSync(process.execPath, [...CLI, ...args], {
    cwd,
    env: { ...env },
    encoding: "utf8",
    timeout: 120_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** {@link runCliProcess} without waiting: several processes can run at once. */
export function startCliProcess(
  args: readonly string[],
  env: Readonly<Record<string, string>>,
  cwd = ROOT,
): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...CLI, ...args], {
      cwd,
      env: { ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (text: string) => (stdout += text));
    child.stderr.setEncoding("utf8").on("data", (text: string) => (stderr += text));
    // A bound, so a hung process cannot hang the suite (a killed one fails its test).
    const timer = setTimeout(() => child.kill("SIGKILL"), 600_000);
    child.on("error", reject);
    child.on("close", (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

const made: string[] = [];

/** A temporary folder, removed by {@link cleanupTemp}. */
export function tempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/** Removes every folder {@link tempDir} made. */
export function cleanupTemp(): void {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
}

/** A PATH folder holding executables that print fixed text, e.g. a `pulumi` printing its version. */
export function fakeTools(tools: Readonly<Record<string, string>>): string {
  const bin = tempDir("bin-");
  for (const [name, output] of Object.entries(tools)) {
    const file = path.join(bin, name);
    fs.writeFileSync(file, `#!/bin/sh\nprintf '%s\\n' ${JSON.stringify(output)}\n`, {
      mode: 0o755,
    });
  }
  return bin;
}

/** Fake values for every credential the CLI knows (by environment variable), and a passphrase. */
export const EVERY_CREDENTIAL: Readonly<Record<string, string>> = {
  ...Object.fromEntries(
    Object.values(CREDENTIALS)
      .flat()
      .map((credential) => [credential.envVar, `FAKE-SECRET-${credential.envVar}`]),
  ),
  PULUMI_CONFIG_PASSPHRASE: "FAKE-SECRET-passphrase",
};
