// The talosctl client's etcd upkeep calls: the arguments it runs and the tables it reads back
// (talosctl v1.13's `etcd status` and `etcd alarm list` layout, tabwriter padding 3).
import { strict as assert } from "node:assert";
import { TalosctlClient } from "../../automation/dayTwo/talosctl";
import type { CommandRunner } from "../../automation/dayTwo/toolRunner";

const CONNECTION = { talosconfig: "/tmp/x/talosconfig", endpoints: ["192.0.2.11", "192.0.2.12"] };
const TARGET = (node: string) => [
  "--talosconfig",
  "/tmp/x/talosconfig",
  "--endpoints",
  "192.0.2.11,192.0.2.12",
  "--nodes",
  node,
];

describe("talosctl client: etcd status, alarm list, defrag", () => {
  it("runs talosctl etcd status|alarm list|defrag against exactly one node and parses the tables", async () => {
    const calls: (readonly string[])[] = [];
    const run: CommandRunner = async (_command, args) => {
      calls.push(args);
      const stdout =
        args[1] === "status"
          ? "NODE         MEMBER             DB SIZE   IN USE            LEADER             RAFT INDEX   RAFT TERM   RAFT APPLIED INDEX   LEARNER   PROTOCOL   STORAGE   ERRORS\n" +
            "192.0.2.12   8a1b2c3d4e5f6002   105 MB    21 MB (20.00%)    8a1b2c3d4e5f6001   901          3           901                  false     3.6.0      3.6.0     \n"
          : args[1] === "alarm"
            ? "NODE         MEMBER             ALARM\n192.0.2.12   8a1b2c3d4e5f6002   NOSPACE\n"
            : "";
      return { code: 0, stdout, stderr: "", timedOut: false };
    };
    const client = new TalosctlClient({ connection: CONNECTION, run });
    const status = await client.etcdStatus("192.0.2.12");
    assert.equal(status.memberId, "8a1b2c3d4e5f6002");
    assert.equal(status.leaderId, "8a1b2c3d4e5f6001");
    assert.equal(status.dbSizeBytes, 105_000_000);
    assert.equal(status.inUseRatio, 0.2);
    assert.deepEqual(await client.etcdAlarms("192.0.2.12"), [
      { memberId: "8a1b2c3d4e5f6002", alarm: "NOSPACE" },
    ]);
    await client.etcdDefrag("192.0.2.13");
    assert.deepEqual(calls, [
      ["etcd", "status", ...TARGET("192.0.2.12")],
      ["etcd", "alarm", "list", ...TARGET("192.0.2.12")],
      ["etcd", "defrag", ...TARGET("192.0.2.13")],
    ]);
  });
});
