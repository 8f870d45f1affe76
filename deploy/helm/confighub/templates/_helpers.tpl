{{/* Names and labels follow the Kong/charts kong chart: <release>-<chart>, or the release name when it holds the chart name. */}}

{{- define "confighub.namespace" -}}
{{- default .Release.Namespace .Values.namespace -}}
{{- end -}}

{{- define "confighub.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "confighub.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "confighub.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "confighub.selectorLabels" -}}
app.kubernetes.io/name: {{ include "confighub.name" . }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
{{- end -}}

{{- define "confighub.metaLabels" -}}
{{ include "confighub.selectorLabels" . }}
helm.sh/chart: {{ include "confighub.chart" . }}
app.kubernetes.io/managed-by: {{ .Release.Service | quote }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- range $key, $value := .Values.extraLabels }}
{{ $key }}: {{ $value | quote }}
{{- end }}
{{- end -}}

{{- define "confighub.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The tokens Secret: an existing one by name, or the one the chart makes from auth.tokens. */}}
{{- define "confighub.authSecretName" -}}
{{- if .Values.auth.existingSecret -}}
{{- .Values.auth.existingSecret -}}
{{- else -}}
{{- printf "%s-auth-tokens" (include "confighub.fullname" .) -}}
{{- end -}}
{{- end -}}

{{- define "confighub.sinksConfigMapName" -}}
{{- if .Values.existingSinksConfigMap -}}
{{- .Values.existingSinksConfigMap -}}
{{- else -}}
{{- printf "%s-sinks" (include "confighub.fullname" .) -}}
{{- end -}}
{{- end -}}

{{- define "confighub.hasSinks" -}}
{{- if or .Values.existingSinksConfigMap .Values.sinks -}}true{{- end -}}
{{- end -}}

{{/* Refusals at render time: a values set the hub would refuse at start, or a production install without its store. */}}
{{- define "confighub.validate" -}}
{{- if not (has .Values.mode (list "single-node" "replicated")) -}}
{{- fail (printf "mode must be single-node or replicated, not %q" .Values.mode) -}}
{{- end -}}
{{- if and (not .Values.auth.existingSecret) (not .Values.auth.tokens) -}}
{{- fail "the hub listens off loopback and refuses to start without bearer tokens: set auth.existingSecret (a Secret with the token file under key tokens) or auth.tokens" -}}
{{- end -}}
{{- if and (eq .Values.mode "replicated") (not .Values.etcd.endpoints) -}}
{{- fail "mode replicated needs etcd.endpoints: the chart runs no etcd, point it at your etcd cluster" -}}
{{- end -}}
{{- if and .Values.tls.enabled (not .Values.tls.secretName) -}}
{{- fail "tls.enabled needs tls.secretName (a kubernetes.io/tls Secret)" -}}
{{- end -}}
{{- if and .Values.tls.clientCASecretName (not .Values.tls.enabled) -}}
{{- fail "tls.clientCASecretName (mTLS) needs tls.enabled" -}}
{{- end -}}
{{- if .Values.cluster.enabled -}}
{{- if not .Values.cluster.certSecretName -}}
{{- fail "cluster.enabled needs cluster.certSecretName (a kubernetes.io/tls Secret with the cluster certificate)" -}}
{{- end -}}
{{- if not (has .Values.cluster.mtls (list "shared" "pki")) -}}
{{- fail (printf "cluster.mtls must be shared or pki, not %q" .Values.cluster.mtls) -}}
{{- end -}}
{{- if and (eq .Values.cluster.mtls "pki") (not .Values.clusterCaSecretName) -}}
{{- fail "cluster.mtls pki needs clusterCaSecretName (a Secret whose ca.crt signs the data planes' certificates)" -}}
{{- end -}}
{{- end -}}
{{- if and (eq .Values.mode "replicated") .Values.podDisruptionBudget.enabled (le (int .Values.replicaCount) 1) -}}
{{- fail "podDisruptionBudget with replicaCount 1 blocks every eviction: set replicaCount above 1 or podDisruptionBudget.enabled false" -}}
{{- end -}}
{{- end -}}
