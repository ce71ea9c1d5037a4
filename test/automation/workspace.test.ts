import type { Stack } from "@pulumi/pulumi/automation";
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { localWorkspaceFactory, stackOperations } from "../../automation/workspace";
import { RUN_SECRETS_FILE_ENV, runSecrets } from "../../components/config/runSecretsEnv";

/** A stand-in for the Automation API's Stack that records the options each method receives. */
function recordingStack() {
  const calls: {
    method: string;
    options: Record<string, unknown> | undefined;
    converge: string | undefined;
    secretsFile?: { name: string; mode: number; content: string };
  }[] = [];
  const envVars: Record<string, string> = {};
  const record = (method: string) => async (options?: Record<string, unknown>) => {
    const file = envVars[RUN_SECRETS_FILE_ENV];
    calls.push({
      method,
      options,
      converge: envVars.TALOS_PLATFORM_CONVERGE,
      ...(file && {
        secretsFile: {
          name: file,
          mode: fs.statSync(file).mode & 0o777,
          content: fs.readFileSync(file, "utf8"),
        },
      }),
    });
    return {};
  };
  const stack = {
    workspace: { envVars },
    preview: record("preview"),
    up: record("up"),
    refresh: record("refresh"),
    destroy: record("destroy"),
    outputs: async () => ({ endpoint: { value: "https://api:6443", secret: false } }),
  };
  return { stack: stack as unknown as Stack, calls };
}

describe("the Automation API adapter", () => {
  const onEvent = () => undefined;
  const onOutput = () => undefined;

  it("streams engine events to onEvent for every operation, with the cancellation signal", async () => {
    const { stack, calls } = recordingStack();
    const operations = stackOperations(stack);
    const signal = new AbortController().signal;
    await operations.up({ onEvent, signal });
    await operations.refresh({ onEvent });
    await operations.destroy({ onEvent });
    assert.deepEqual(calls, [
      { method: "up", options: { onEvent, signal }, converge: "" },
      { method: "refresh", options: { onEvent }, converge: "" },
      { method: "destroy", options: { onEvent }, converge: "" },
    ]);
  });

  it("hands the credentials to preview and up only, in a 0600 file of the run's temp folder, removed after", async () => {
    const { stack, calls } = recordingStack();
    const secrets = { "talos-platform:proxmoxApiToken": "FAKE-SECRET-token" };
    const operations = stackOperations(stack, secrets);
    await operations.preview({ onEvent });
    await operations.up({ onEvent });
    await operations.refresh({ onEvent });
    await operations.destroy({ onEvent });
    const [preview, up, refresh, destroy] = calls;
    for (const run of [preview, up]) {
      assert.equal(run.secretsFile!.mode, 0o600, run.method);
      assert.deepEqual(JSON.parse(run.secretsFile!.content), secrets);
      assert.ok(run.secretsFile!.name.startsWith(os.tmpdir() + path.sep), run.secretsFile!.name);
      assert.ok(!fs.existsSync(path.dirname(run.secretsFile!.name)), "its folder is gone");
    }
    assert.notEqual(preview.secretsFile!.name, up.secretsFile!.name, "a file per operation");
    // refresh and destroy do not run the program: providers are configured from the state.
    assert.equal(refresh.secretsFile, undefined);
    assert.equal(destroy.secretsFile, undefined);
    assert.equal(stack.workspace.envVars[RUN_SECRETS_FILE_ENV], "");
  });

  it("removes the credentials file when the operation fails", async () => {
    const { stack, calls } = recordingStack();
    const up = stack.up.bind(stack);
    stack.up = async (options) => {
      await up(options);
      throw new Error("the engine failed");
    };
    const operations = stackOperations(stack, { "talos-platform:proxmoxApiToken": "FAKE-SECRET" });
    await assert.rejects(operations.up({ onEvent }), /the engine failed/);
    assert.ok(!fs.existsSync(calls[0].secretsFile!.name));
    assert.equal(stack.workspace.envVars[RUN_SECRETS_FILE_ENV], "");
  });

  it("lets the program read the credentials file once: it is deleted as it is read", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "run-secrets-read-"));
    try {
      const file = path.join(dir, "secrets.json");
      fs.writeFileSync(file, JSON.stringify({ "talos-platform:a": "FAKE-SECRET-a", b: "" }));
      const env = { [RUN_SECRETS_FILE_ENV]: file };
      assert.deepEqual(runSecrets(env), { "talos-platform:a": "FAKE-SECRET-a" });
      assert.ok(!fs.existsSync(file), "deleted by the first read, before any provider starts");
      assert.deepEqual(runSecrets(env), { "talos-platform:a": "FAKE-SECRET-a" }, "kept in memory");
      assert.deepEqual(runSecrets({ [RUN_SECRETS_FILE_ENV]: "" }), {});
      assert.throws(
        () => runSecrets({ [RUN_SECRETS_FILE_ENV]: path.join(dir, "gone.json") }),
        /TALOS_PLATFORM_RUN_SECRETS_FILE: cannot read .*gone\.json \(ENOENT\); it is set by the platform CLI/,
      );
      const bad = path.join(dir, "bad.json");
      fs.writeFileSync(bad, "not json FAKE-SECRET-x");
      assert.throws(
        () => runSecrets({ [RUN_SECRETS_FILE_ENV]: bad }),
        (error: Error) => /not JSON/.test(error.message) && !error.message.includes("FAKE-SECRET"),
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("hands the program what the CLI's steps reached, in the engine's environment, for that run only", async () => {
    const { stack, calls } = recordingStack();
    const operations = stackOperations(stack);
    await operations.up({ onEvent, converge: { kubernetesVersion: "1.37.1" } });
    await operations.preview({ onEvent });
    assert.deepEqual(
      calls.map((c) => c.converge),
      ['{"kubernetesVersion":"1.37.1"}', ""],
    );
    assert.ok(
      calls.every((c) => !("converge" in (c.options ?? {}))),
      "never on the command line",
    );
  });

  it("asks the engine for its diff and its text output only for preview --diff", async () => {
    const { stack, calls } = recordingStack();
    const operations = stackOperations(stack);
    await operations.preview({ onEvent });
    await operations.preview({ onEvent, onOutput, diff: true });
    assert.deepEqual(
      calls.map(({ method, options }) => ({ method, options })),
      [
        { method: "preview", options: { onEvent } },
        { method: "preview", options: { onEvent, onOutput, diff: true } },
      ],
    );
  });

  it("reads the stack's outputs", async () => {
    const { stack } = recordingStack();
    assert.deepEqual(await stackOperations(stack).outputs(), {
      endpoint: { value: "https://api:6443", secret: false },
    });
  });

  it("opens no stack before the Pulumi CLI was found", async () => {
    await assert.rejects(
      localWorkspaceFactory().openStack({
        workDir: ".",
        stackName: "staging",
        envVars: {},
        secretsProvider: "passphrase",
        create: false,
      }),
      /openStack called before ensureCli/,
    );
  });
});
