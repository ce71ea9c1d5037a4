// The foundation program and its stack file: validation runs first, on the values the engine hands
// over, and an invalid stack file registers nothing. The rules themselves: test/config/rules/.
import { strict as assert } from "node:assert";
import { StackConfigError } from "../components/config/problems";
import { cloudCluster, proxmoxCluster } from "./fixtures";
import { runFoundation, StackValues } from "./harness";
import { Recorder } from "./mocks";

/** Runs the program over `values` and returns the problems it refused them with. */
async function refusal(values: StackValues, secrets: Record<string, string> = {}) {
  const recorder = new Recorder();
  let problems: readonly string[] = [];
  await assert.rejects(runFoundation(values, { recorder, secrets, preview: true }), (error) => {
    assert.ok(error instanceof StackConfigError, String(error));
    problems = error.problems;
    return true;
  });
  assert.equal(recorder.resources.length, 0, "no resource registered");
  return problems;
}

describe("the foundation program's stack file", () => {
  it("registers nothing when the stack file is invalid, and something when it is valid", async () => {
    const values: any = proxmoxCluster();
    values.nodes.pop();
    assert.deepEqual(await refusal(values), [
      "nodes: etcd needs an odd number of control planes; got 2. Use 1, 3 or 5",
    ]);
    const { recorder } = await runFoundation(proxmoxCluster(), { preview: true });
    assert.ok(recorder.resources.length > 0, "the valid config does register resources");
  });

  it("refuses a credential the stack's config holds in plain text, and takes it as a secret", async () => {
    const token = "root@pam!pulumi=FAKE-SECRET-token";
    const problems = await refusal({ ...proxmoxCluster(), proxmoxApiToken: token });
    assert.deepEqual(
      problems.map((p) => p.split(":")[0]),
      ["proxmoxApiToken"],
    );
    const { recorder } = await runFoundation(proxmoxCluster(), {
      secrets: { proxmoxApiToken: token },
      preview: true,
    });
    assert.ok(recorder.resources.length > 0);
  });

  it("tells a YAML user who wrote a scalar for a section that a mapping is expected", async () => {
    assert.deepEqual(await refusal({ ...proxmoxCluster(), cluster: "demo" }), [
      'cluster: expected a mapping; got "demo"',
    ]);
  });

  it("creates no machine for a node whose patches alone would overflow its user data", async () => {
    const values: any = cloudCluster();
    values.nodes[3].patches = [
      { machine: { files: [{ path: "/var/big", op: "create", content: "x".repeat(20_000) }] } },
    ];
    const problems = await refusal(values);
    assert.match(problems[0], /^nodes\[3\]: the machine config of oci-1 is about/);
  });
});
