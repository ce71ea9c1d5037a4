import type { Stack } from "@pulumi/pulumi/automation";
import { strict as assert } from "node:assert";
import { localWorkspaceFactory, stackOperations } from "../../automation/workspace";

/** A stand-in for the Automation API's Stack that records the options each method receives. */
function recordingStack() {
  const calls: {
    method: string;
    options: Record<string, unknown> | undefined;
    converge: string | undefined;
  }[] = [];
  const envVars: Record<string, string> = {};
  const record = (method: string) => async (options?: Record<string, unknown>) => {
    calls.push({ method, options, converge: envVars.TALOS_PLATFORM_CONVERGE });
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
