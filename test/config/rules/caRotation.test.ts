// components/config/rules/caRotation.ts and the record's schema: what rotate-ca writes in
// cluster.caRotation.
import { itRefuses, proxmoxCluster, RuleCase } from "../../fixtures";

const cases: RuleCase[] = [
  {
    rule: "a rotation record naming a node the stack file does not have",
    base: proxmoxCluster,
    broken: (v) =>
      (v.cluster.caRotation = {
        talos: { generation: 1, phase: "issuing", nodes: ["cp-1", "cp-9"] },
      }),
    problems: [
      'cluster.caRotation.talos.nodes[1]: is not a node of the stack file; got "cp-9". rotate-ca wrote the nodes it reached; rerun `npm run platform -- rotate-ca <env> --talos` after restoring the node, or restore the record from Git',
    ],
  },
  {
    rule: "a rotation record with an unknown phase",
    base: proxmoxCluster,
    broken: (v) => (v.cluster.caRotation = { kubernetes: { generation: 1, phase: "swapped" } }),
    problems: [
      'cluster.caRotation.kubernetes.phase: expected one of generated, accepted, issuing, removed; got "swapped"',
    ],
  },
];

describe("rules: CA rotation records", () => itRefuses(cases));
