// components/config/rules/userData.ts: cloud nodes' user data within their platform's limit.
import { strict as assert } from "node:assert";
import { cloudCluster, itRefuses, problemsOf, RuleCase } from "../../fixtures";

/** A patch of about 20 kB. */
const BIG_PATCH = {
  machine: { files: [{ path: "/var/big", op: "create", content: "x".repeat(20_000) }] },
};

const cases: RuleCase[] = [
  {
    rule: "a node whose patches alone would overflow its platform's user data",
    base: cloudCluster,
    broken: (v) => (v.nodes[3].patches = [BIG_PATCH]),
    problems: [
      "nodes[3]: the machine config of oci-1 is about 35,360 bytes as user data, over OCI's limit of 32,000 bytes (instance metadata, counted after base64). Shrink its patches (cluster.patches, nodes[].patches)",
    ],
    // OpenStack's limit is larger.
    valid: (v) => (v.nodes[6].patches = [BIG_PATCH]),
  },
];

describe("rules: userData", () => {
  itRefuses(cases);

  it("estimates cloud nodes' user data even when other sections have problems", () => {
    const problems = problemsOf(cloudCluster, (v) => {
      v.cluster.patches = { worker: [{ machine: { sysctls: { "x.y": "z".repeat(30_000) } } }] };
      v.nodes[0].proxmox.vmId = 5;
    });
    assert.equal(problems[0], "nodes[0].proxmox.vmId: Proxmox VM IDs start at 100; got 5");
    assert.match(
      problems[1],
      /^nodes\[3\]: the machine config of oci-1 is about [\d,]+ bytes as user data, over OCI's limit of 32,000 bytes/,
    );
    // OpenStack allows 65,535 bytes, so only the three OCI workers are over.
    assert.equal(problems.length, 4);
  });
});
