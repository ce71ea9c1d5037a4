import { strict as assert } from "node:assert";
import {
  clientTrust,
  generationsNeeded,
  nodePhase,
  nodeTrust,
  rotationSteps,
} from "../components/talos/caRotation";
import type { CaRotationRecord } from "../components/spec/types";

const NODES = ["cp-1", "cp-2", "worker-1"];

describe("CA rotation phases", () => {
  describe("rotationSteps", () => {
    it("runs a fresh rotation: generated once, then each phase node by node, control planes first", () => {
      assert.deepEqual(rotationSteps(undefined, NODES), [
        { generation: 1, phase: "generated" },
        { generation: 1, phase: "accepted", nodes: ["cp-1"] },
        { generation: 1, phase: "accepted", nodes: ["cp-1", "cp-2"] },
        { generation: 1, phase: "accepted" },
        { generation: 1, phase: "issuing", nodes: ["cp-1"] },
        { generation: 1, phase: "issuing", nodes: ["cp-1", "cp-2"] },
        { generation: 1, phase: "issuing" },
        { generation: 1, phase: "removed", nodes: ["cp-1"] },
        { generation: 1, phase: "removed", nodes: ["cp-1", "cp-2"] },
        { generation: 1, phase: "removed" },
      ]);
    });

    it("starts the next generation after a finished one", () => {
      const steps = rotationSteps({ generation: 1, phase: "removed" }, NODES);
      assert.deepEqual(steps[0], { generation: 2, phase: "generated" });
      assert.equal(steps.length, 10);
      assert.ok(steps.every((s) => s.generation === 2));
    });

    it("resumes a phase stopped partway at the next node (the last one reached is applied again with it)", () => {
      assert.deepEqual(rotationSteps({ generation: 1, phase: "issuing", nodes: ["cp-1"] }, NODES), [
        { generation: 1, phase: "issuing", nodes: ["cp-1", "cp-2"] },
        { generation: 1, phase: "issuing" },
        { generation: 1, phase: "removed", nodes: ["cp-1"] },
        { generation: 1, phase: "removed", nodes: ["cp-1", "cp-2"] },
        { generation: 1, phase: "removed" },
      ]);
    });

    it("resumes after a whole phase with the next phase", () => {
      const steps = rotationSteps({ generation: 3, phase: "generated" }, NODES);
      assert.deepEqual(steps[0], { generation: 3, phase: "accepted", nodes: ["cp-1"] });
      assert.equal(steps.length, 9);
    });

    it("a single-node cluster takes one step per phase", () => {
      assert.deepEqual(
        rotationSteps(undefined, ["cp-1"]).map((s) => s.phase),
        ["generated", "accepted", "issuing", "removed"],
      );
    });
  });

  describe("what a node's config trusts", () => {
    const cases: [CaRotationRecord | undefined, string, string][] = [
      [undefined, "cp-1", "new/"],
      [{ generation: 1, phase: "generated" }, "cp-1", "old/"],
      [{ generation: 1, phase: "accepted" }, "cp-1", "old/new"],
      [{ generation: 1, phase: "issuing" }, "cp-1", "new/old"],
      [{ generation: 1, phase: "removed" }, "cp-1", "new/"],
      // A node the rolling phase has not reached is one phase behind.
      [{ generation: 1, phase: "accepted", nodes: ["cp-1"] }, "cp-2", "old/"],
      [{ generation: 1, phase: "issuing", nodes: ["cp-1"] }, "cp-2", "old/new"],
      [{ generation: 1, phase: "removed", nodes: ["cp-1"] }, "cp-2", "new/old"],
      [{ generation: 1, phase: "removed", nodes: ["cp-1"] }, "cp-1", "new/"],
    ];
    for (const [record, node, expected] of cases) {
      it(`${JSON.stringify(record)}: ${node} issues/accepts ${expected}`, () => {
        const trust = nodeTrust(record, node);
        assert.equal(`${trust.issuing}/${trust.accepted.join(",")}`, expected);
      });
    }

    it("nodePhase names the phase a node is rendered for", () => {
      const record: CaRotationRecord = { generation: 1, phase: "issuing", nodes: ["cp-1"] };
      assert.equal(nodePhase(record, "cp-1"), "issuing");
      assert.equal(nodePhase(record, "worker-1"), "accepted");
    });
  });

  describe("what the cluster's clients use", () => {
    it("keeps the old credentials until the new CA issues, then a new certificate trusting both, then the new CA only", () => {
      const at = (phase: CaRotationRecord["phase"], nodes?: string[]) =>
        clientTrust({ generation: 1, phase, ...(nodes ? { nodes } : {}) });
      assert.deepEqual(at("generated"), { signedBy: "old", servers: ["old"] });
      assert.deepEqual(at("accepted", ["cp-1"]), { signedBy: "old", servers: ["old"] });
      assert.deepEqual(at("issuing", ["cp-1"]), { signedBy: "new", servers: ["new", "old"] });
      assert.deepEqual(at("removed", ["cp-1"]), { signedBy: "new", servers: ["new"] });
      assert.deepEqual(clientTrust(undefined), { signedBy: "new", servers: ["new"] });
    });

    it("every client is valid against every node at every step (its certificate accepted, each server's CA trusted)", () => {
      for (const step of rotationSteps(undefined, NODES)) {
        const client = clientTrust(step);
        for (const node of NODES) {
          const trust = nodeTrust(step, node);
          assert.ok(
            trust.issuing === client.signedBy || trust.accepted.includes(client.signedBy),
            `${JSON.stringify(step)}: ${node} refuses the client`,
          );
          assert.ok(
            client.servers.includes(trust.issuing),
            `${JSON.stringify(step)}: the client does not trust ${node}'s server certificate`,
          );
        }
      }
    });

    it("at the end a client of the old CA is refused by every node", () => {
      const end: CaRotationRecord = { generation: 1, phase: "removed" };
      for (const node of NODES) {
        const trust = nodeTrust(end, node);
        assert.ok(trust.issuing !== "old" && !trust.accepted.includes("old"));
      }
    });
  });

  it("keeps the CA rotated from in the state until it left every node", () => {
    assert.deepEqual(generationsNeeded(undefined), { current: 0 });
    assert.deepEqual(generationsNeeded({ generation: 1, phase: "accepted" }), {
      current: 1,
      old: 0,
    });
    assert.deepEqual(generationsNeeded({ generation: 2, phase: "removed", nodes: ["cp-1"] }), {
      current: 2,
      old: 1,
    });
    assert.deepEqual(generationsNeeded({ generation: 2, phase: "removed" }), { current: 2 });
  });
});
