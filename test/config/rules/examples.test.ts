// components/config/rules/examples.ts: example values left in a stack (documentation addresses and
// MACs) are a warning of `validate`, never a problem.
import { strict as assert } from "node:assert";
import { checkPlatformConfig } from "../../../components/config/validate";
import { clone, mixedCluster, problemsOf, warningsOf } from "../../fixtures";
import type { StackValues } from "../../harness";

/** The mixed cluster on addresses of a real network (10.20.0.0/24, fd20::/64) and MACs. */
function ownAddresses(): StackValues {
  const text = JSON.stringify(mixedCluster())
    .replace(/192\.0\.2\./g, "10.20.0.")
    .replace(/2001:db8::/g, "fd20::");
  return JSON.parse(text) as StackValues;
}

/** The warnings `validate` prints for a changed copy of `base`. */
function validateWarnings(base: () => StackValues, change: (v: any) => void): readonly string[] {
  const values = clone(base());
  change(values);
  const presentKeys = new Set(Object.keys(values));
  return checkPlatformConfig(
    { ...values, secretKeys: new Set(), presentKeys },
    "Pulumi.test.yaml",
    { exampleValues: true },
  ).warnings;
}

const HINT =
  "Replace the example values with your network's addresses and your machines' MACs before preview: 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32 and 00:00:5e:00:53:xx reach no real machine";

const cases: { rule: string; change: (v: any) => void; warnings: string[] }[] = [
  {
    rule: "an unchanged example's addresses",
    change: () => undefined,
    warnings: [],
  },
  {
    rule: "a documentation IPv4 address left in",
    change: (v) => (v.cluster.network.nameservers = ["198.51.100.53"]),
    warnings: [
      `cluster.network.nameservers[0]: is an example value (a documentation address or MAC); got "198.51.100.53". ${HINT}`,
    ],
  },
  {
    rule: "a documentation IPv6 address and a documentation MAC left in",
    change: (v) => {
      v.nodes[4].baremetal.maintenanceAddress = "2001:db8::99";
      v.nodes[4].network.mac = "00:00:5E:00:53:31";
    },
    warnings: [
      `nodes[4].network.mac: is an example value (a documentation address or MAC), and so are nodes[4].baremetal.maintenanceAddress; got "00:00:5E:00:53:31". ${HINT}`,
    ],
  },
];

describe("rules: example values", () => {
  for (const c of cases) {
    it(`${c.warnings.length > 0 ? "warns about" : "says nothing of"} ${c.rule}`, () => {
      assert.deepEqual(problemsOf(ownAddresses, c.change), []);
      assert.deepEqual(validateWarnings(ownAddresses, c.change), c.warnings);
    });
  }

  it("warns once, naming a few keys, about an example copied unchanged; never a problem", () => {
    assert.deepEqual(
      problemsOf(mixedCluster, () => undefined),
      [],
    );
    assert.deepEqual(
      validateWarnings(mixedCluster, () => undefined),
      [
        `cluster.vip: is an example value (a documentation address or MAC), and so are cluster.network.nameservers[0], nodes[0].network.addresses[0], nodes[0].network.gateway and 11 more; got "192.0.2.10". ${HINT}`,
      ],
    );
    // The program (preview, up) does not log it: its tests' stacks use such values on purpose.
    assert.deepEqual(
      warningsOf(mixedCluster, () => undefined),
      [],
    );
  });
});
