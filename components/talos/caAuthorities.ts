// The cluster's Talos API and Kubernetes CAs across rotations (caRotation.ts says which one each
// node and each client uses in each phase). A rotated-to CA comes from one more machine-secrets
// resource of the provider (`talos:machine/secrets:Secrets`, one per generation): it generates a CA
// bundle and an os:admin client certificate signed by its own Talos CA, so no key is made or signed
// outside the provider, and the keys live only in the state, as secrets. Only its `os` (Talos) or
// `k8s` (Kubernetes) CA is used; every other secret stays the cluster's own.
import * as pulumi from "@pulumi/pulumi";
import * as talos from "@pulumiverse/talos";
import type { CaRotationRecord } from "../spec/types";
import { type CaSide, clientTrust, generationsNeeded, nodeTrust } from "./caRotation";
import { clientCredentials, type ClientCredentials, machineSecretsInput } from "./credentials";

type SecretsOutputs = talos.types.output.machine.MachineSecrets;
type Certificate = talos.types.output.machine.Certificate;

/** The two CAs a rotation record may involve, as base64 PEM (the provider's encoding). */
interface CaPair {
  readonly old?: pulumi.Output<Certificate>;
  readonly new: pulumi.Output<Certificate>;
}

/** Inputs of {@link CaAuthorities}. */
export interface CaAuthoritiesArgs {
  /** The cluster's own machine secrets (generation 0 of both CAs). */
  readonly secrets: talos.machine.Secrets;
  /** The config contract the machine secrets are generated for. */
  readonly configContract: string;
  readonly rotation: { readonly talos?: CaRotationRecord; readonly kubernetes?: CaRotationRecord };
  readonly parent: pulumi.Resource;
}

/** What each node's config and the cluster's clients use, under the stack's rotation records. */
export class CaAuthorities {
  /** The client credentials of the talosconfig and of the provider's own Talos API calls. */
  readonly client: ClientCredentials;
  /** The generation of the Kubernetes CA the admin kubeconfig is fetched under (its resource's name). */
  readonly kubeconfigGeneration: number;
  private readonly talosCas: CaPair;
  private readonly kubernetesCas: CaPair;
  private readonly secretsByKey = new Map<string, pulumi.Output<SecretsOutputs>>();
  private readonly generated = new Map<string, talos.machine.Secrets>();

  constructor(
    private readonly name: string,
    private readonly args: CaAuthoritiesArgs,
  ) {
    const { secrets, rotation } = args;
    const own = secrets.machineSecrets;
    const talosGen = generationsNeeded(rotation.talos);
    const k8sGen = generationsNeeded(rotation.kubernetes);
    const talosCa = (g: number) =>
      g === 0 ? own.certs.os : this.generation("talos", g, rotation.talos!).machineSecrets.certs.os;
    const k8sCa = (g: number) =>
      g === 0
        ? own.certs.k8s
        : this.generation("kubernetes", g, rotation.kubernetes!).machineSecrets.certs.k8s;
    this.talosCas = {
      new: talosCa(talosGen.current),
      ...(talosGen.old !== undefined ? { old: talosCa(talosGen.old) } : {}),
    };
    this.kubernetesCas = {
      new: k8sCa(k8sGen.current),
      ...(k8sGen.old !== undefined ? { old: k8sCa(k8sGen.old) } : {}),
    };

    const trust = clientTrust(rotation.talos);
    const signer = this.generationOf("talos", trust.signedBy);
    const signed =
      signer === 0
        ? secrets.clientConfiguration
        : this.generation("talos", signer, rotation.talos!).clientConfiguration;
    const base = clientCredentials(signed);
    // Outside the issuing phase the client trusts just the CA its certificate comes from, exactly
    // as the provider encoded it (a re-encoded copy would show as a change on every node's apply).
    const servers = trust.servers.map((side) => this.cert(this.talosCas, side));
    this.client =
      trust.servers.length === 1
        ? base
        : {
            ...base,
            caCertificate: pulumi.secret(
              pulumi.all(servers).apply((certs) => pemBundle(certs.map((c) => c.cert))),
            ),
          };
    const k8s = rotation.kubernetes;
    this.kubeconfigGeneration =
      k8s === undefined
        ? 0
        : k8s.phase === "issuing" || k8s.phase === "removed"
          ? k8s.generation
          : k8s.generation - 1;
  }

  /** The machine secrets a node's config is generated from: each CA the one the node issues from. */
  machineSecretsFor(node: string): pulumi.Output<talos.types.input.machine.MachineSecretsArgs> {
    const os = nodeTrust(this.args.rotation.talos, node).issuing;
    const k8s = nodeTrust(this.args.rotation.kubernetes, node).issuing;
    const key = `${os}/${k8s}`;
    let secrets = this.secretsByKey.get(key);
    if (!secrets) {
      secrets = pulumi
        .all([
          this.args.secrets.machineSecrets,
          this.cert(this.talosCas, os),
          this.cert(this.kubernetesCas, k8s),
        ])
        .apply(([own, osCa, k8sCa]) => ({ ...own, certs: { ...own.certs, os: osCa, k8s: k8sCa } }));
      this.secretsByKey.set(key, secrets);
    }
    return machineSecretsInput(secrets);
  }

  /**
   * The patch that lists the CAs a node accepts beside its issuing ones (`machine.acceptedCAs`,
   * `cluster.acceptedCAs`; certificates only, no key), or none outside a rotation. Stack patches may
   * not touch the CAs (config/rules/patches.ts): this one is the program's own.
   */
  acceptedCasPatch(node: string): pulumi.Output<string[]> {
    const talosAccepted = nodeTrust(this.args.rotation.talos, node).accepted.map((side) =>
      this.cert(this.talosCas, side),
    );
    const k8sAccepted = nodeTrust(this.args.rotation.kubernetes, node).accepted.map((side) =>
      this.cert(this.kubernetesCas, side),
    );
    return pulumi
      .all([pulumi.all(talosAccepted), pulumi.all(k8sAccepted)])
      .apply(([machine, cluster]) => {
        if (machine.length === 0 && cluster.length === 0) return [];
        const listed = (certs: Certificate[]) => certs.map((c) => ({ crt: c.cert }));
        return [
          JSON.stringify({
            ...(machine.length > 0 ? { machine: { acceptedCAs: listed(machine) } } : {}),
            ...(cluster.length > 0 ? { cluster: { acceptedCAs: listed(cluster) } } : {}),
          }),
        ];
      });
  }

  private cert(pair: CaPair, side: CaSide): pulumi.Output<Certificate> {
    if (side === "new") return pair.new;
    if (!pair.old) throw new Error("a CA rotation record without the CA it rotates from");
    return pair.old;
  }

  private generationOf(kind: "talos" | "kubernetes", side: CaSide): number {
    const needed = generationsNeeded(this.args.rotation[kind]);
    return side === "new" ? needed.current : needed.old!;
  }

  /**
   * The machine-secrets resource of one rotated-to generation. Protected while its CA is the one
   * the nodes issue from (losing it would leave no key for the cluster's CA); the one rotated from
   * stops being protected once the new one issues, and leaves the state with the last node.
   */
  private generation(
    kind: "talos" | "kubernetes",
    generation: number,
    record: CaRotationRecord,
  ): talos.machine.Secrets {
    const key = `${kind}-${generation}`;
    let resource = this.generated.get(key);
    if (!resource) {
      const issuing = record.phase === "issuing" || record.phase === "removed";
      const live = generation === (issuing ? record.generation : record.generation - 1);
      resource = new talos.machine.Secrets(
        `${this.name}-${kind}-ca-${generation}`,
        { talosVersion: this.args.configContract },
        {
          parent: this.args.parent,
          protect: live,
          ignoreChanges: ["talosVersion"],
          additionalSecretOutputs: ["machineSecrets", "clientConfiguration"],
        },
      );
      this.generated.set(key, resource);
    }
    return resource;
  }
}

/** Base64 PEM certificates (the provider's encoding) as one base64 PEM bundle. */
export function pemBundle(certs: readonly string[]): string {
  const pem = certs.map((c) => {
    const text = c.startsWith("-----BEGIN") ? c : Buffer.from(c, "base64").toString("utf8");
    return text.endsWith("\n") ? text : `${text}\n`;
  });
  return Buffer.from(pem.join(""), "utf8").toString("base64");
}
