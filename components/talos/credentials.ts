// Talos credentials passed on field by field: handing the provider's nested objects through whole has
// failed for users ("Expected a string, got map"), and wrapping each field keeps it secret even where
// an engine does not honour additionalSecretOutputs.
import * as pulumi from "@pulumi/pulumi";
import * as talos from "@pulumiverse/talos";

type SecretsOutputs = talos.types.output.machine.MachineSecrets;
type ClientOutputs = talos.types.output.machine.ClientConfiguration;

/** The machine secrets as a `getConfiguration` input, every field secret. */
export function machineSecretsInput(secrets: pulumi.Output<SecretsOutputs>): talos.types.input.machine.MachineSecretsArgs {
  const s = pulumi.secret(secrets);
  const certificate = (c: pulumi.Output<talos.types.output.machine.Certificate>) => ({ cert: c.cert, key: c.key });
  return {
    certs: {
      etcd: certificate(s.certs.etcd),
      k8s: certificate(s.certs.k8s),
      k8sAggregator: certificate(s.certs.k8sAggregator),
      k8sServiceaccount: { key: s.certs.k8sServiceaccount.key },
      os: certificate(s.certs.os),
    },
    cluster: { id: s.cluster.id, secret: s.cluster.secret },
    // aescbcEncryptionSecret exists for older contracts only; sending it empty would be a value.
    secrets: s.secrets.apply(({ bootstrapToken, secretboxEncryptionSecret, aescbcEncryptionSecret }) => ({
      bootstrapToken,
      secretboxEncryptionSecret,
      ...(aescbcEncryptionSecret ? { aescbcEncryptionSecret } : {}),
    })),
    trustdinfo: { token: s.trustdinfo.token },
  };
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
  return { caCertificate: c.caCertificate, clientCertificate: c.clientCertificate, clientKey: c.clientKey };
}
