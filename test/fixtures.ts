// Valid stack configs to start from, each test changing one thing; the problems validation reports
// for a changed copy; and the Talos schema that generated documents must pass.
import Ajv2020, { type ValidateFunction } from "ajv/dist/2020";
import { strict as assert } from "node:assert";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { StackConfigError } from "../components/config/problems";
import { schemasDir, shippedSchemas } from "../components/config/talosSchema";
import { checkPlatformConfig, validatePlatformConfig } from "../components/config/validate";
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
 * The Proxmox cluster with the foundation services on: GCP, OpenBao's unseal key, DNS and Flux from an
 * ssh:// repository (which needs the fluxDeployKey secret).
 */
export function withServices(): StackValues {
  const values: any = proxmoxCluster();
  values.gcp = { project: "example-homelab", region: "europe-west3" };
  values.openbao = {};
  values.dns = {
    zone: "example-net",
    domain: "example.net",
    records: [{ name: "*.apps.demo.example.net", values: ["192.0.2.60"] }],
  };
  values.flux = {
    version: "v2.7.3",
    repository: "ssh://git@github.com/example/homelab.git",
    path: "clusters/demo",
    knownHosts: GITHUB_KNOWN_HOSTS,
  };
  return values;
}

/**
 * The problems validation reports for a changed copy of `base` (none when it is valid), with the keys
 * present as the engine would pass them: every key of the values, and `secretKeys` as secrets.
 */
export function problemsOf(
  base: () => StackValues,
  change: (values: any) => void,
  secretKeys: ReadonlySet<string> = new Set(),
): readonly string[] {
  const values = clone(base());
  change(values);
  const presentKeys = new Set([...Object.keys(values), ...secretKeys]);
  try {
    validatePlatformConfig({ ...values, secretKeys, presentKeys }, "Pulumi.test.yaml");
    return [];
  } catch (error) {
    if (error instanceof StackConfigError) return error.problems;
    throw error;
  }
}

/** The warnings of a changed copy of `base`, which must be valid. */
export function warningsOf(
  base: () => StackValues,
  change: (values: any) => void,
): readonly string[] {
  const values = clone(base());
  change(values);
  const presentKeys = new Set(Object.keys(values));
  return checkPlatformConfig({ ...values, secretKeys: new Set(), presentKeys }, "Pulumi.test.yaml")
    .warnings;
}

/** A stack file that breaks a rule, the exact problems it gets, and a valid neighbour. */
export interface RuleCase {
  readonly rule: string;
  readonly base: () => StackValues;
  readonly broken: (values: any) => void;
  readonly problems: readonly string[];
  /** A change of the same base that must pass. */
  readonly valid?: (values: any) => void;
  /** Config keys the stack has as secrets. */
  readonly secrets?: readonly string[];
}

/** One test that refuses each case with its problems, and one that accepts its valid neighbour. */
export function itRefuses(cases: readonly RuleCase[]): void {
  for (const c of cases) {
    const secrets = new Set(c.secrets ?? []);
    it(`refuses ${c.rule}`, () =>
      assert.deepEqual(problemsOf(c.base, c.broken, secrets), c.problems));
    const valid = c.valid;
    if (valid) {
      it(`accepts the valid neighbour of ${c.rule}`, () =>
        assert.deepEqual(problemsOf(c.base, valid, secrets), []));
    }
  }
}

const talosSchemas = new Map<string, ValidateFunction>();

/**
 * ajv over a Talos minor's machine-config schema the program ships (components/config/talosSchemas):
 * an independent check that the documents the program generates are valid Talos documents.
 */
export function validTalos(minor: string): ValidateFunction {
  let validate = talosSchemas.get(minor);
  if (!validate) {
    const file = path.join(schemasDir(), shippedSchemas()[minor].schema);
    const schema = JSON.parse(readFileSync(file, "utf8"));
    validate = new Ajv2020({ strict: false, allErrors: true, formats: { uri: true } }).compile(
      schema,
    );
    talosSchemas.set(minor, validate);
  }
  return validate;
}

/** {@link validTalos} of Talos 1.13, the shipped stacks' contract. */
export function validTalos113(): ValidateFunction {
  return validTalos("1.13");
}

/**
 * An age identity made for the tests (`age-keygen`'s form) and its public key: the off-site etcd
 * backups' encryption in test stacks. Not a secret of anything real.
 */
export const TEST_AGE_IDENTITY =
  "AGE-SECRET-KEY-18JR0CGLKVJENMS7RMKZ8ZFYWSFT6ERETX4V4CL82LH7HDU44QWLQLLVDGP";
export const TEST_AGE_RECIPIENT = "age1thmpnj62s2t4ksf8mvjhtr2he7ld6zr6tm5xykmufztpy5gh8cjsxydqx9";

/** {@link withServices} with off-site etcd backups to the state bucket (a gs:// backend). */
export function withEtcdBackups(): StackValues {
  const values: any = withServices();
  values.backend = "gs://demo-state/foundation";
  values.etcdBackups = { schedule: "0 */6 * * *", encryption: { age: TEST_AGE_RECIPIENT } };
  return values;
}
