// components/config/rules/images.ts: the Talos images (schematics, architecture-specific extensions,
// Proxmox image formats and SSH).
import { strict as assert } from "node:assert";
import { cloudCluster, itRefuses, problemsOf, proxmoxCluster, RuleCase } from "../../fixtures";

const cases: RuleCase[] = [
  {
    rule: "a schematic ID together with extensions",
    base: proxmoxCluster,
    broken: (v) => (v.cluster.imageFactory.schematicId = "3".repeat(64)),
    problems: [
      "cluster.imageFactory.schematicId: cannot be combined with extensions or extraKernelArgs. Either name a schematic, or list extensions and let the program register the schematic",
    ],
  },
  {
    rule: "a compressed format without SSH",
    base: proxmoxCluster,
    broken: (v) => (v.proxmox.imageFormat = "raw.zst"),
    problems: [
      'proxmox.imageFormat: becomes iso content on Proxmox, which the provider imports only over SSH; got "raw.zst". Add proxmox.ssh, or use qcow2 or raw (Proxmox VE 8.4+; docs/platforms.md, Proxmox: the image path)',
    ],
  },
  {
    rule: "SSH without the agent or a key",
    base: proxmoxCluster,
    broken: (v) => (v.proxmox.ssh = { username: "root" }),
    problems: [
      "proxmoxSshPrivateKey: required as a secret because proxmox.ssh.agent is not true. Let the CLI resolve it (Bitwarden proxmox-ssh-private-key, or PROXMOX_VE_SSH_PRIVATE_KEY), or set proxmox.ssh.agent: true to use SSH_AUTH_SOCK",
    ],
  },
  {
    rule: "an xz image (Proxmox cannot decompress xz)",
    base: proxmoxCluster,
    broken: (v) => (v.proxmox.imageFormat = "raw.xz"),
    problems: ['proxmox.imageFormat: expected one of qcow2, raw, raw.zst, raw.gz; got "raw.xz"'],
  },
  {
    rule: "a host SSH address without SSH",
    base: proxmoxCluster,
    broken: (v) => (v.proxmox.hosts[1].sshAddress = "pve2.example.net"),
    problems: [
      'proxmox.hosts[1].sshAddress: is only used with proxmox.ssh; got "pve2.example.net". Remove it, or add proxmox.ssh',
    ],
  },
  {
    rule: "an x86-only extension for every node when a node runs arm64",
    base: cloudCluster,
    broken: (v) => (v.cluster.imageFactory.extensions = ["siderolabs/amd-ucode"]),
    problems: [
      'cluster.imageFactory.extensions[0]: siderolabs/amd-ucode is built for x86 only, and nodes[3] runs the arm64 image; got "siderolabs/amd-ucode". Move it to cluster.imageFactory.architectureExtensions.amd64',
    ],
    valid: (v) =>
      (v.cluster.imageFactory.architectureExtensions = { amd64: ["siderolabs/amd-ucode"] }),
  },
];

describe("rules: images", () => {
  itRefuses(cases);

  it("accepts SSH with the key as a secret", () => {
    assert.deepEqual(
      problemsOf(
        proxmoxCluster,
        (v) => {
          v.proxmox.imageFormat = "raw.gz";
          v.proxmox.ssh = { username: "root" };
        },
        new Set(["proxmoxSshPrivateKey"]),
      ),
      [],
    );
  });
});
