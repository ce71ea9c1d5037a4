import type { Stack } from "@pulumi/pulumi/automation";
import { strict as assert } from "node:assert";
import { localWorkspaceFactory, stackOperations } from "../../automation/workspace";

/** A stand-in for the Automation API's Stack that records the options each method receives. */
function recordingStack() {
  const calls: { method: string; options: Record<string, unknown> | undefined }[] = [];
  const record = (method: string) => async (options?: Record<string, unknown>) => {
    calls.push({ method, options });
    return {};
  };
  const stack = {
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
      { method: "up", options: { onEvent, signal } },
      { method: "refresh", options: { onEvent } },
      { method: "destroy", options: { onEvent } },
    ]);
  });

  it("asks the engine for its diff and its text output only for preview --diff", async () => {
    const { stack, calls } = recordingStack();
    const operations = stackOperations(stack);
    await operations.preview({ onEvent });
    await operations.preview({ onEvent, onOutput, diff: true });
    assert.deepEqual(calls, [
      { method: "preview", options: { onEvent } },
      { method: "preview", options: { onEvent, onOutput, diff: true } },
    ]);
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
