// components/config/rules/endpoint.ts: the Kubernetes API's endpoint.
import { itRefuses, proxmoxCluster, RuleCase } from "../../fixtures";

const cases: RuleCase[] = [
  {
    rule: "neither endpoint nor VIP",
    base: proxmoxCluster,
    broken: (v) => {
      delete v.cluster.endpoint;
      delete v.cluster.vip;
    },
    problems: [
      "cluster.endpoint: required unless cluster.vip is set. Give the Kubernetes API's DNS name or IP (e.g. api.staging.example.net), or a vip",
    ],
  },
];

describe("rules: endpoint", () => {
  itRefuses(cases);
});
