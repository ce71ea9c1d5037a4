// components/config/rules/versions.ts: Talos, Kubernetes and config-contract versions that fit.
import { itRefuses, proxmoxCluster, RuleCase } from "../../fixtures";

const cases: RuleCase[] = [
  {
    rule: "a Kubernetes version the Talos version does not support",
    base: proxmoxCluster,
    broken: (v) => (v.cluster.kubernetesVersion = "1.37.0"),
    problems: [
      'cluster.kubernetesVersion: Talos 1.13 does not support Kubernetes 1.37; got "1.37.0". Use Kubernetes 1.31 to 1.36, or another Talos version',
    ],
  },
  {
    rule: "a Talos release line this program does not know",
    base: proxmoxCluster,
    broken: (v) => (v.cluster.talosVersion = "v1.9.0"),
    problems: [
      'cluster.talosVersion: unknown Talos release line 1.9; got "v1.9.0". This program knows Talos 1.10 to 1.14',
    ],
  },
  {
    rule: "a config contract newer than Talos",
    base: proxmoxCluster,
    broken: (v) => (v.cluster.configContract = "v1.14.0"),
    problems: [
      'cluster.configContract: is newer than cluster.talosVersion; got "v1.14.0". Use 1.13 or older',
    ],
  },
  {
    rule: "a config contract older than the documents the program emits",
    base: proxmoxCluster,
    broken: (v) => (v.cluster.configContract = "v1.11.6"),
    problems: [
      'cluster.configContract: is older than Talos 1.12: the configs this program generates use documents Talos 1.12 introduced (HostnameConfig, LinkConfig, ...); got "v1.11.6". Use a contract from 1.12 to 1.13 (e.g. v1.12.0); a cluster created under an older one needs its nodes\' configs regenerated',
    ],
    valid: (v) => (v.cluster.configContract = "v1.12.4"),
  },
  {
    rule: "a Talos line older than the documents the program emits",
    base: proxmoxCluster,
    broken: (v) => {
      v.cluster.talosVersion = "v1.11.6";
      v.cluster.kubernetesVersion = "1.34.1";
    },
    problems: [
      'cluster.talosVersion: Talos 1.11 is older than 1.12: the configs this program generates use documents Talos 1.12 introduced (HostnameConfig, LinkConfig, ...); got "v1.11.6". Upgrade the nodes to Talos 1.12 or newer with talosctl first, then set that version',
    ],
    valid: (v) => {
      v.cluster.talosVersion = "v1.12.4";
      v.cluster.kubernetesVersion = "1.35.2";
    },
  },
  {
    rule: "a config contract the provider's generator does not know",
    base: proxmoxCluster,
    broken: (v) => {
      v.cluster.talosVersion = "v1.14.1";
      v.cluster.configContract = "v1.14.1";
    },
    problems: [
      "cluster.configContract: Talos 1.14's config contract is not one the Talos provider's config generator knows (it is built on Talos machinery 1.13, which would generate 1.13 configs under 1.14's name); got \"v1.14.1\". Pin cluster.configContract to the version the cluster was created with, 1.13 or older, until the provider's generator supports 1.14",
    ],
    valid: (v) => {
      v.cluster.talosVersion = "v1.14.1";
      v.cluster.configContract = "v1.13.9";
    },
  },
  {
    rule: "Talos 1.14 without a pinned config contract, which would default to 1.14's",
    base: proxmoxCluster,
    broken: (v) => {
      v.cluster.talosVersion = "v1.14.1";
      delete v.cluster.configContract;
    },
    problems: [
      "cluster.configContract: is not set, so it is cluster.talosVersion v1.14.1: Talos 1.14's config contract is not one the Talos provider's config generator knows (it is built on Talos machinery 1.13, which would generate 1.13 configs under 1.14's name). Pin cluster.configContract to the version the cluster was created with, 1.13 or older, until the provider's generator supports 1.14",
    ],
  },
];

describe("rules: versions", () => {
  itRefuses(cases);
});
