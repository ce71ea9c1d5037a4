// Input shapes of the Talos provider v0.8.1 schema (nested object types).
import * as pulumi from "@pulumi/pulumi";

export namespace machine {
  /** Talos API client credentials (`talos:machine/generated:ClientConfiguration`). */
  export interface ClientConfiguration {
    caCertificate: pulumi.Input<string>;
    clientCertificate: pulumi.Input<string>;
    /** Secret. */
    clientKey: pulumi.Input<string>;
  }
  /** Credentials passed to `Bootstrap`. */
  export type BootstrapClientConfiguration = ClientConfiguration;
  /** Credentials passed to `ConfigurationApply`. */
  export type ConfigurationApplyClientConfiguration = ClientConfiguration;
  /** A certificate and its private key. */
  export interface CertificateArgs {
    cert: pulumi.Input<string>;
    key: pulumi.Input<string>;
  }
  /** A private key. */
  export interface KeyArgs {
    key: pulumi.Input<string>;
  }
  /** The cluster's certificate authorities and keys. */
  export interface CertificatesArgs {
    etcd: pulumi.Input<CertificateArgs>;
    k8s: pulumi.Input<CertificateArgs>;
    k8sAggregator: pulumi.Input<CertificateArgs>;
    k8sServiceaccount: pulumi.Input<KeyArgs>;
    os: pulumi.Input<CertificateArgs>;
  }
  /** The cluster identity. */
  export interface ClusterArgs {
    id: pulumi.Input<string>;
    secret: pulumi.Input<string>;
  }
  /** Kubernetes bootstrap token and encryption secrets. */
  export interface KubernetesSecretsArgs {
    bootstrapToken: pulumi.Input<string>;
    secretboxEncryptionSecret: pulumi.Input<string>;
    aescbcEncryptionSecret?: pulumi.Input<string>;
  }
  /** The trustd token. */
  export interface TrustdInfoArgs {
    token: pulumi.Input<string>;
  }
  /** A complete set of machine secrets (`talos:machine/generated:MachineSecrets`). */
  export interface MachineSecretsArgs {
    certs: pulumi.Input<CertificatesArgs>;
    cluster: pulumi.Input<ClusterArgs>;
    secrets: pulumi.Input<KubernetesSecretsArgs>;
    trustdinfo: pulumi.Input<TrustdInfoArgs>;
  }
  /** What a `ConfigurationApply` does to the node when it is destroyed. */
  export interface ConfigurationApplyOnDestroy {
    graceful?: pulumi.Input<boolean>;
    reboot?: pulumi.Input<boolean>;
    reset?: pulumi.Input<boolean>;
  }
  /** Operation timeouts, as Go durations (`"10m"`). */
  export interface Timeout {
    create?: pulumi.Input<string>;
    update?: pulumi.Input<string>;
    delete?: pulumi.Input<string>;
  }
  /** Bootstrap timeout. */
  export interface BootstrapTimeouts {
    create?: pulumi.Input<string>;
  }
}

export namespace client {
  /** Credentials for a generated talosconfig. */
  export interface GetConfigurationClientConfigurationArgs {
    caCertificate: pulumi.Input<string>;
    clientCertificate: pulumi.Input<string>;
    clientKey: pulumi.Input<string>;
  }
}

export namespace cluster {
  /** Credentials used to read a kubeconfig. */
  export interface KubeconfigClientConfiguration {
    caCertificate: pulumi.Input<string>;
    clientCertificate: pulumi.Input<string>;
    clientKey: pulumi.Input<string>;
  }
  /** Kubeconfig timeouts. */
  export interface KubeconfigTimeouts {
    create?: pulumi.Input<string>;
    update?: pulumi.Input<string>;
  }
  /** Credentials used for the health check. */
  export interface GetHealthClientConfigurationArgs {
    caCertificate: pulumi.Input<string>;
    clientCertificate: pulumi.Input<string>;
    clientKey: pulumi.Input<string>;
  }
  /** Health check timeout. */
  export interface GetHealthTimeoutsArgs {
    read?: pulumi.Input<string>;
  }
}
