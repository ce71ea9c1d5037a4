// The Talos images the nodes boot: an Image Factory schematic either named or built from extensions,
// extensions that fit each node's CPU architecture, and a Proxmox image format the provider can
// import (the compressed ones only over SSH).
import { PROXMOX_IMAGE_FORMATS } from "../../nodes/proxmox/imageFormat";
import { ociArchitecture } from "../derived";
import type { Rule } from "./rule";

/** Extensions built for x86 only: an arm64 schematic cannot carry them. */
const X86_ONLY_EXTENSIONS: readonly string[] = ["siderolabs/intel-ucode", "siderolabs/amd-ucode"];

/** A named schematic is used as it is: listing extensions or kernel args as well is a contradiction. */
export const imageFactory: Rule = ({ cluster }, problems) => {
  const factory = cluster?.imageFactory;
  if (!factory?.schematicId) return;
  const customised =
    (factory.extensions?.length ?? 0) +
    (factory.extraKernelArgs?.length ?? 0) +
    Object.values(factory.platformExtensions ?? {}).reduce((n, list) => n + (list?.length ?? 0), 0);
  if (customised > 0) {
    problems.add(
      ["cluster", "imageFactory", "schematicId"],
      "cannot be combined with extensions or extraKernelArgs",
      {
        hint: "Either name a schematic, or list extensions and let the program register the schematic",
      },
    );
  }
};

/** The Proxmox image format can be imported the way the stack reaches Proxmox (API, or SSH too). */
export const proxmoxImage: Rule = ({ proxmox, secretKeys }, problems) => {
  if (!proxmox) return;
  const format = proxmox.imageFormat ?? "qcow2";
  if (PROXMOX_IMAGE_FORMATS[format].needsSsh && !proxmox.ssh) {
    problems.add(
      ["proxmox", "imageFormat"],
      "becomes iso content on Proxmox, which the provider imports only over SSH",
      {
        got: format,
        hint: "Add proxmox.ssh, or use qcow2 or raw (Proxmox VE 8.4+; docs/platforms.md, Proxmox: the image path)",
      },
    );
  }
  if (proxmox.ssh && proxmox.ssh.agent !== true && !secretKeys.has("proxmoxSshPrivateKey")) {
    problems.add(
      ["proxmoxSshPrivateKey"],
      "required as a secret because proxmox.ssh.agent is not true",
      {
        hint: "Let the CLI resolve it (Bitwarden proxmox-ssh-private-key, or PROXMOX_VE_SSH_PRIVATE_KEY), or set proxmox.ssh.agent: true to use SSH_AUTH_SOCK",
      },
    );
  }
  proxmox.hosts.forEach((host, i) => {
    if (host.sshAddress && !proxmox.ssh) {
      problems.add(["proxmox", "hosts", i, "sshAddress"], "is only used with proxmox.ssh", {
        got: host.sshAddress,
        hint: "Remove it, or add proxmox.ssh",
      });
    }
  });
};

/** An extension built for one architecture cannot go into a schematic of the other. */
export const architectureExtensions: Rule = ({ cluster, nodes, oci }, problems) => {
  const factory = cluster?.imageFactory;
  if (!factory) return;
  const arm =
    ociArchitecture(oci) === "arm64"
      ? nodes.find(({ node }) => node.platform === "oci")
      : undefined;
  if (!arm) return;
  const check = (path: (string | number)[], list: readonly string[] | undefined) =>
    list?.forEach((extension, i) => {
      if (X86_ONLY_EXTENSIONS.includes(extension)) {
        problems.add(
          [...path, i],
          `${extension} is built for x86 only, and nodes[${arm.index}] runs the arm64 image`,
          { got: extension, hint: "Move it to cluster.imageFactory.architectureExtensions.amd64" },
        );
      }
    });
  check(["cluster", "imageFactory", "extensions"], factory.extensions);
  check(["cluster", "imageFactory", "platformExtensions", "oci"], factory.platformExtensions?.oci);
  check(
    ["cluster", "imageFactory", "architectureExtensions", "arm64"],
    factory.architectureExtensions?.arm64,
  );
};
