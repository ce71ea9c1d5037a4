# Read application secrets for the External Secrets Operator.
path "secret/data/apps/*" {
  capabilities = ["read"]
}

path "secret/metadata/apps/*" {
  capabilities = ["read", "list"]
}
