import { PulumiCommand } from "@pulumi/pulumi/automation";
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ExitCode, UserError } from "../../automation/errors";
import {
  PULUMI_SDK_VERSION,
  type PulumiCommandSource,
  cliInstallRoot,
  resolvePulumiCommand,
} from "../../automation/pulumiCli";
import { EVERY_CREDENTIAL, runCliProcess } from "./process";

/** A source whose lookups fail like the real `PulumiCommand.get` on a machine without the CLI. */
function recordingSource(options: { onPath?: unknown; inRoot?: unknown; install?: unknown } = {}) {
  const calls: string[] = [];
  const enoent = (command: string) =>
    new Error(
      `code: -2\n stdout: \n stderr: Command failed with ENOENT: ${command} version\nspawn ${command} ENOENT\n err?: \n`,
    );
  const source: PulumiCommandSource<string> = {
    async get(opts) {
      calls.push(opts?.root ? `get ${opts.root}` : "get PATH");
      if (!opts?.root) {
        if (options.onPath === "found") return "pulumi on PATH";
        throw options.onPath ?? enoent("pulumi");
      }
      if (options.inRoot === "found") return "pulumi in root";
      throw options.inRoot ?? enoent(`${opts.root}/bin/pulumi`);
    },
    async install(opts) {
      calls.push(`install ${opts.root}`);
      if (options.install !== undefined) throw options.install;
      return "installed pulumi";
    },
  };
  return { source, calls };
}

async function rejection(promise: Promise<unknown>): Promise<UserError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof UserError, `a UserError, got ${String(error)}`);
    return error;
  }
  assert.fail("expected a rejection");
}

describe("finding the Pulumi CLI", () => {
  const home = "/home/operator";
  const root = path.join(home, ".pulumi", "versions", PULUMI_SDK_VERSION);

  it("installs into Pulumi's per-version folder under the user's home", () => {
    assert.equal(cliInstallRoot(home), root);
  });

  it("says what to install when the CLI is missing, without installing anything", async () => {
    const { source, calls } = recordingSource();
    const error = await rejection(resolvePulumiCommand({ source, install: false, homeDir: home }));
    assert.equal(error.exitCode, ExitCode.missingCli);
    assert.equal(
      error.message,
      `Pulumi CLI: not found on PATH nor in ${root}; got "spawn pulumi ENOENT". Install it (https://www.pulumi.com/docs/install/), or rerun with --install-cli to install Pulumi ${PULUMI_SDK_VERSION} into ${root}`,
    );
    assert.deepEqual(calls, ["get PATH", `get ${root}`]);
  });

  it("recognises the real Automation API's error for a missing CLI", async () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), "no-pulumi-"));
    try {
      const source: PulumiCommandSource<PulumiCommand> = {
        get: (opts) => PulumiCommand.get({ ...opts, root: opts.root ?? empty }),
        install: () => Promise.reject(new Error("not in tests")),
      };
      const error = await rejection(
        resolvePulumiCommand({ source, install: false, homeDir: empty }),
      );
      assert.equal(error.exitCode, ExitCode.missingCli);
      assert.match(
        error.message,
        /^Pulumi CLI: not found on PATH nor in .*; got "spawn .*\/bin\/pulumi ENOENT"\. Install it/,
      );
    } finally {
      fs.rmSync(empty, { recursive: true, force: true });
    }
  });

  it("refuses a CLI older than the programs need (replaceWith), as the real Automation API checks it", async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "old-pulumi-"));
    try {
      fs.mkdirSync(path.join(root, "bin"));
      fs.writeFileSync(path.join(root, "bin", "pulumi"), "#!/bin/sh\necho v3.206.0\n", {
        mode: 0o755,
      });
      const source: PulumiCommandSource<PulumiCommand> = {
        // Both lookups go to the old CLI, as if it were on PATH.
        get: (opts) => PulumiCommand.get({ ...opts, root }),
        install: () => Promise.reject(new Error("not in tests")),
      };
      const error = await rejection(
        resolvePulumiCommand({ source, install: false, homeDir: root }),
      );
      assert.equal(error.exitCode, ExitCode.missingCli);
      assert.match(error.message, /^Pulumi CLI: cannot be used with @pulumi\/pulumi /);
      assert.match(error.message, /3\.206\.0.*3\.207\.0|3\.207\.0.*3\.206\.0/);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it("uses the CLI on PATH first", async () => {
    const { source, calls } = recordingSource({ onPath: "found" });
    assert.equal(
      await resolvePulumiCommand({ source, install: true, homeDir: home }),
      "pulumi on PATH",
    );
    assert.deepEqual(calls, ["get PATH"]);
  });

  it("reuses a CLI that --install-cli installed before", async () => {
    const { source, calls } = recordingSource({ inRoot: "found" });
    assert.equal(
      await resolvePulumiCommand({ source, install: false, homeDir: home }),
      "pulumi in root",
    );
    assert.deepEqual(calls, ["get PATH", `get ${root}`]);
  });

  it("installs the SDK's version under the home folder with --install-cli", async () => {
    const { source, calls } = recordingSource();
    assert.equal(
      await resolvePulumiCommand({ source, install: true, homeDir: home }),
      "installed pulumi",
    );
    assert.deepEqual(calls, ["get PATH", `get ${root}`, `install ${root}`]);
  });

  it("reports a failed installation with what to do instead", async () => {
    const { source } = recordingSource({
      install: new Error("getaddrinfo ENOTFOUND get.pulumi.com"),
    });
    const error = await rejection(resolvePulumiCommand({ source, install: true, homeDir: home }));
    assert.equal(error.exitCode, ExitCode.missingCli);
    assert.match(
      error.message,
      /^Pulumi CLI: could not be installed into .*; got "getaddrinfo ENOTFOUND get\.pulumi\.com"\. Install it yourself \(https:\/\/www\.pulumi\.com\/docs\/install\/\) and rerun$/,
    );
  });

  it("asks to upgrade a CLI that is too old", async () => {
    const { source } = recordingSource({
      onPath: new Error(
        "Minimum version requirement failed. The minimum CLI version requirement is 3.200.0, your current CLI version is 3.100.0. Please update the Pulumi CLI.",
      ),
    });
    const error = await rejection(resolvePulumiCommand({ source, install: false, homeDir: home }));
    assert.match(
      error.message,
      /^Pulumi CLI: cannot be used with @pulumi\/pulumi .*; got "Minimum version requirement failed\..*"\. Upgrade it \(https:\/\/www\.pulumi\.com\/docs\/install\/\), or rerun with --install-cli/,
    );
  });

  it("`npm run platform -- up staging` on a machine without the CLI exits 5 saying what to install", function () {
    this.timeout(120_000);
    const home = fs.mkdtempSync(path.join(os.tmpdir(), "home-"));
    const bin = fs.mkdtempSync(path.join(os.tmpdir(), "bin-"));
    try {
      // Every credential present: the CLI is the one thing missing.
      const result = runCliProcess(["up", "staging"], {
        ...EVERY_CREDENTIAL,
        PATH: bin,
        HOME: home,
      });
      assert.equal(result.status, ExitCode.missingCli, result.stderr);
      const lines = result.stderr.trim().split("\n");
      assert.equal(
        lines.at(-2),
        `Pulumi CLI: not found on PATH nor in ${cliInstallRoot(home)}; got "spawn pulumi ENOENT". Install it (https://www.pulumi.com/docs/install/), or rerun with --install-cli to install Pulumi ${PULUMI_SDK_VERSION} into ${cliInstallRoot(home)}`,
      );
      assert.match(lines[0], /^foundation\/staging \(Pulumi\.staging\.yaml\): ready to preview$/);
      assert.equal(lines.at(-1), "up staging: 1 of 1 stack ready; no usable Pulumi CLI");
      assert.equal(result.stdout, "");
      assert.doesNotMatch(result.stderr, /FAKE-SECRET/);
    } finally {
      fs.rmSync(home, { recursive: true, force: true });
      fs.rmSync(bin, { recursive: true, force: true });
    }
  });
});
