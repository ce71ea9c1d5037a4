// Valid stack configs to start from; each test changes one thing.
import { StackConfigError, validatePlatformConfig } from "../components/config";
import type { StackValues } from "./harness";

/** GitHub's published SSH host key (ed25519), as `ssh-keyscan github.com` prints it: public, not a secret. */
export const GITHUB_KNOWN_HOSTS =
  "github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl";

/** Three Proxmox control planes on three hosts behind a VIP (like staging). */
export function proxmoxCluster(): StackValues {
  return {
    cluster: {
      name: "demo",
      endpoint: "api.demo.example.net",
      vip: "192.0.2.10",
      talosVersion: "v1.13.9",
      kubernetesVersion: "1.36.3",
      imageFactory: { platformExtensions: { proxmox: ["siderolabs/qemu-guest-agent"] } },
      network: { nameservers: ["192.0.2.1"] },
    },
    proxmox: {
      endpoint: "https://pve1.example.net:8006/",
      hosts: [{ name: "pve1" }, { name: "pve2" }, { name: "pve3" }],
    },
    nodes: [1, 2, 3].map((i) => ({
      name: `cp-${i}`,
      role: "controlplane",
      platform: "proxmox",
      network: { addresses: [`192.0.2.1${i}/24`], gateway: "192.0.2.1" },
      proxmox: { host: `pve${i}`, vmId: 100 + i, vlan: 20 },
    })),
  };
}

/**
 * The Proxmox cluster plus one Proxmox worker and one bare-metal worker on the same LAN (the same
 * site), its config pushed over IPv6.
 */
export function mixedCluster(): StackValues {
  const values = proxmoxCluster();
  (values.nodes as unknown[]).push(
    {
      name: "worker-1",
      role: "worker",
      platform: "proxmox",
      network: { addresses: ["192.0.2.21/24"], gateway: "192.0.2.1", mac: "BC:24:11:00:00:21" },
      proxmox: { host: "pve1", vmId: 121, cores: 4, memory: 8192, diskSize: 64 },
    },
    {
      name: "metal-1",
      role: "worker",
      platform: "baremetal",
      site: "proxmox",
      installDisk: "/dev/nvme0n1",
      network: {
        addresses: ["192.0.2.31/24", "2001:db8::31/64"],
        gateway: "192.0.2.1",
        gateway6: "2001:db8::1",
        interface: "enp1s0",
      },
      baremetal: { address: "2001:db8::31" },
    },
  );
  return values;
}

/** A deep copy, so a test can change it freely. */
export function clone<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/**
 * Proxmox control planes with an OCI worker pool (arm64, spread over two ADs) and an OpenStack worker
 * pool: three sites whose node addresses route to each other.
 */
export function cloudCluster(): StackValues {
  const values: any = proxmoxCluster();
  values.cluster.network.connectivity = "routed";
  values.oci = {
    region: "eu-frankfurt-1",
    compartmentId: "ocid1.compartment.oc1..example",
    subnetId: "ocid1.subnet.oc1.eu-frankfurt-1.example",
    availabilityDomains: ["Uocm:EU-FRANKFURT-1-AD-1", "Uocm:EU-FRANKFURT-1-AD-2"],
    image: {
      objectStorageUri:
        "https://objectstorage.eu-frankfurt-1.oraclecloud.com/p/example/n/ns/b/talos/o/oracle-arm64.qcow2",
    },
  };
  values.openstack = {
    networkId: "net-example",
    subnetId: "subnet-example",
    flavor: "m1.large",
    availabilityZones: ["az1", "az2"],
  };
  values.nodes.push(
    ...[1, 2, 3].map((i) => ({
      name: `oci-${i}`,
      role: "worker",
      platform: "oci",
      oci: { privateIp: `198.51.100.${20 + i}` },
    })),
    ...[1, 2].map((i) => ({
      name: `os-${i}`,
      role: "worker",
      platform: "openstack",
      openstack: { fixedIp: `203.0.113.${20 + i}`, volumeSize: 40 },
    })),
  );
  return values;
}

/**
 * The problems validation reports for a changed copy of `base` (none when it is valid).
 * `secretKeys` are the secret config keys the stack is taken to have.
 */
export function problemsOf(
  base: () => StackValues,
  change: (values: any) => void,
  secretKeys: ReadonlySet<string> = new Set(),
): readonly string[] {
  const values = clone(base());
  change(values);
  try {
    validatePlatformConfig({ ...values, secretKeys }, "Pulumi.test.yaml");
    return [];
  } catch (error) {
    if (error instanceof StackConfigError) return error.problems;
    throw error;
  }
}
