// Talos credentials passed on field by field: handing the provider's nested objects through whole has
// failed for users ("Expected a string, got map"), and wrapping each field keeps it secret even where
// an engine does not honour additionalSecretOutputs.
import * as pulumi from "@pulumi/pulumi";
import * as talos from "@pulumiverse/talos";

type SecretsOutputs = talos.types.output.machine.MachineSecrets;
type ClientOutputs = talos.types.output.machine.ClientConfiguration;

/**
 * The machine secrets as a `getConfiguration` input: one secret Output holding a freshly built object,
 * copied field by field (one Output rather than one per field keeps each per-node invoke cheap).
 */
export function machineSecretsInput(
  secrets: pulumi.Output<SecretsOutputs>,
): pulumi.Output<talos.types.input.machine.MachineSecretsArgs> {
  const certificate = (c: talos.types.output.machine.Certificate) => ({ cert: c.cert, key: c.key });
  return pulumi.secret(secrets).apply(({ certs, cluster, secrets: kubernetes, trustdinfo }) => ({
    certs: {
      etcd: certificate(certs.etcd),
      k8s: certificate(certs.k8s),
      k8sAggregator: certificate(certs.k8sAggregator),
      k8sServiceaccount: { key: certs.k8sServiceaccount.key },
      os: certificate(certs.os),
    },
    cluster: { id: cluster.id, secret: cluster.secret },
    // aescbcEncryptionSecret exists for older contracts only; sending it empty would be a value.
    secrets: {
      bootstrapToken: kubernetes.bootstrapToken,
      secretboxEncryptionSecret: kubernetes.secretboxEncryptionSecret,
      ...(kubernetes.aescbcEncryptionSecret
        ? { aescbcEncryptionSecret: kubernetes.aescbcEncryptionSecret }
        : {}),
    },
    trustdinfo: { token: trustdinfo.token },
  }));
}

/** Talos API client credentials, every field secret. */
export interface ClientCredentials {
  readonly caCertificate: pulumi.Output<string>;
  readonly clientCertificate: pulumi.Output<string>;
  readonly clientKey: pulumi.Output<string>;
}

/** The admin client credentials as an input of ConfigurationApply, Bootstrap, Kubeconfig and the invokes. */
export function clientCredentials(client: pulumi.Output<ClientOutputs>): ClientCredentials {
  const c = pulumi.secret(client);
  return {
    caCertificate: c.caCertificate,
    clientCertificate: c.clientCertificate,
    clientKey: c.clientKey,
  };
}
