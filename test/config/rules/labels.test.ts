// components/config/rules/labels.ts: node labels and taints in Kubernetes' syntax.
import { itRefuses, proxmoxCluster, RuleCase } from "../../fixtures";
import { itRefusesMutations } from "../arbitraryStack";

const cases: RuleCase[] = [
  {
    rule: "a label key with two slashes and a taint without a valid effect",
    base: proxmoxCluster,
    broken: (v) => {
      v.nodes[0].labels = { "example.net/rack/a": "r1" };
      v.nodes[1].patches = [{ machine: { nodeTaints: { dedicated: "ingress:NoWay" } } }];
    },
    problems: [
      'nodes[0].labels: label key "example.net/rack/a" has more than one /. Label keys are [prefix/]name, e.g. topology.kubernetes.io/zone',
      'nodes[1].patches[0]: taint "dedicated" in machine.nodeTaints needs an effect (NoSchedule, PreferNoSchedule, NoExecute), written value:Effect or Effect; got "ingress:NoWay". For example dedicated: ingress:NoSchedule',
    ],
    valid: (v) => {
      v.nodes[0].labels = { "example.net/rack": "r1" };
      v.nodes[1].patches = [{ machine: { nodeTaints: { dedicated: "ingress:NoSchedule" } } }];
    },
  },
  {
    rule: "a label value Kubernetes refuses",
    base: proxmoxCluster,
    broken: (v) => (v.nodes[2].labels = { "topology.kubernetes.io/zone": "rack 3" }),
    problems: [
      "nodes[2].labels: the value of label \"topology.kubernetes.io/zone\" must be letters, digits, '-', '_' or '.' starting and ending with a letter or digit; got \"rack 3\"",
    ],
    valid: (v) => (v.nodes[2].labels = { "topology.kubernetes.io/zone": "rack-3" }),
  },
];

describe("rules: labels", () => {
  itRefuses(cases);

  itRefusesMutations({
    "a label key Kubernetes refuses": (v) => {
      v.nodes[0].labels = { "-bad": "x" };
      return "nodes[0].labels";
    },
  });
});
