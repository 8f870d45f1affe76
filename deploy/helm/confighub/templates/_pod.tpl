{{/*
The hub's pod, shared by the StatefulSet (single-node) and the Deployment
(replicated). Kubernetes' grpc probe speaks plaintext only, so with
tls.enabled the default probes check the TCP port instead of the health
status; set readinessProbe/livenessProbe for an exec of grpc-health-probe
-tls when the image has it.
*/}}
{{- define "confighub.grpcCheck" -}}
{{- if .Values.tls.enabled -}}
tcpSocket:
  port: {{ .Values.grpc.containerPort }}
{{- else -}}
grpc:
  port: {{ .Values.grpc.containerPort }}
{{- end -}}
{{- end -}}

{{- define "confighub.readinessProbe" -}}
{{- if .Values.readinessProbe -}}
{{ toYaml .Values.readinessProbe }}
{{- else if eq .Values.mode "replicated" -}}
{{/* NOT_SERVING while etcd is unreachable: the Service stops sending pushes to a replica that could not store them. */}}
{{ include "confighub.grpcCheck" . }}
periodSeconds: 2
failureThreshold: 1
{{- else -}}
{{ include "confighub.grpcCheck" . }}
periodSeconds: 5
{{- end -}}
{{- end -}}

{{- define "confighub.livenessProbe" -}}
{{- if .Values.livenessProbe -}}
{{ toYaml .Values.livenessProbe }}
{{- else if eq .Values.mode "replicated" -}}
{{/* A replica waiting for etcd answers NOT_SERVING: liveness restarts only a wedged process, so it checks the port. */}}
tcpSocket:
  port: {{ .Values.grpc.containerPort }}
periodSeconds: 10
failureThreshold: 6
{{- else -}}
{{ include "confighub.grpcCheck" . }}
periodSeconds: 10
failureThreshold: 6
{{- end -}}
{{- end -}}

{{- define "confighub.args" -}}
- --listen=0.0.0.0:{{ .Values.grpc.containerPort }}
{{- if eq .Values.mode "replicated" }}
- --store=etcd
- --etcd-endpoints={{ join "," .Values.etcd.endpoints }}
{{- if .Values.etcd.tls.secretName }}
- --etcd-ca=/etc/confighub-etcd-tls/ca.crt
- --etcd-cert=/etc/confighub-etcd-tls/tls.crt
- --etcd-key=/etc/confighub-etcd-tls/tls.key
{{- end }}
- --etcd-prefix={{ .Values.etcd.prefix }}
- --replica-id=$(POD_NAME)
- --lease-ttl={{ .Values.etcd.leaseTTL }}
{{- if .Values.etcd.opTimeout }}
- --etcd-op-timeout={{ .Values.etcd.opTimeout }}
{{- end }}
{{- else }}
- --store=bolt
- --data-dir=/data
{{- end }}
{{- if include "confighub.hasSinks" . }}
- --sinks=/etc/confighub/sinks.yaml
{{- end }}
{{- if .Values.logLevel }}
- --log-level={{ .Values.logLevel }}
{{- end }}
- --log-format={{ .Values.logFormat }}
- --shutdown-timeout={{ .Values.shutdownTimeout }}
- --auth-tokens=/etc/confighub-auth/tokens
{{- if .Values.status.enabled }}
- --metrics-listen=0.0.0.0:{{ .Values.status.containerPort }}
{{- else }}
- --metrics-listen=
{{- end }}
{{- if .Values.tls.enabled }}
- --tls-cert=/etc/confighub-tls/tls.crt
- --tls-key=/etc/confighub-tls/tls.key
{{- if .Values.tls.clientCASecretName }}
- --tls-client-ca=/etc/confighub-client-ca/ca.crt
{{- end }}
{{- end }}
{{- if .Values.cluster.enabled }}
- --cluster-listen=0.0.0.0:{{ .Values.cluster.containerPort }}
- --cluster-cert=/etc/confighub-cluster/tls.crt
- --cluster-cert-key=/etc/confighub-cluster/tls.key
- --cluster-mtls={{ .Values.cluster.mtls }}
{{- if eq .Values.cluster.mtls "pki" }}
- --cluster-ca-cert=/etc/confighub-cluster-ca/ca.crt
{{- end }}
{{- end }}
{{- with .Values.extraArgs }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "confighub.podTemplate" -}}
metadata:
  labels:
    {{- include "confighub.selectorLabels" . | nindent 4 }}
    {{- with .Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- if or .Values.sinks .Values.auth.tokens .Values.podAnnotations }}
  annotations:
    {{- if .Values.sinks }}
    checksum/sinks: {{ toYaml .Values.sinks | sha256sum }}
    {{- end }}
    {{- if .Values.auth.tokens }}
    checksum/auth-tokens: {{ .Values.auth.tokens | sha256sum }}
    {{- end }}
    {{- with .Values.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- end }}
spec:
  terminationGracePeriodSeconds: {{ .Values.terminationGracePeriodSeconds }}
  {{- with .Values.image.pullSecrets }}
  imagePullSecrets:
    {{- range . }}
    - name: {{ . }}
    {{- end }}
  {{- end }}
  {{- with .Values.priorityClassName }}
  priorityClassName: {{ . }}
  {{- end }}
  {{- with .Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- if .Values.topologySpreadConstraints }}
  topologySpreadConstraints:
    {{- toYaml .Values.topologySpreadConstraints | nindent 4 }}
  {{- else if eq .Values.mode "replicated" }}
  topologySpreadConstraints:
    - maxSkew: 1
      topologyKey: kubernetes.io/hostname
      whenUnsatisfiable: ScheduleAnyway
      labelSelector:
        matchLabels:
          {{- include "confighub.selectorLabels" . | nindent 10 }}
  {{- end }}
  {{- with .Values.securityContext }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  containers:
    - name: confighub
      image: {{ include "confighub.image" . }}
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      {{- if or (eq .Values.mode "replicated") .Values.extraEnv }}
      env:
        {{- if eq .Values.mode "replicated" }}
        - name: POD_NAME
          valueFrom:
            fieldRef:
              fieldPath: metadata.name
        {{- with .Values.etcd.auth.existingSecret }}
        - name: CONFIGHUB_ETCD_USERNAME
          valueFrom:
            secretKeyRef:
              name: {{ . }}
              key: username
        - name: CONFIGHUB_ETCD_PASSWORD
          valueFrom:
            secretKeyRef:
              name: {{ . }}
              key: password
        {{- end }}
        {{- end }}
        {{- with .Values.extraEnv }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- end }}
      args:
        {{- include "confighub.args" . | nindent 8 }}
      ports:
        - name: grpc
          containerPort: {{ .Values.grpc.containerPort }}
        {{- if .Values.status.enabled }}
        - name: metrics
          containerPort: {{ .Values.status.containerPort }}
        {{- end }}
        {{- if .Values.cluster.enabled }}
        - name: cluster
          containerPort: {{ .Values.cluster.containerPort }}
        {{- end }}
      readinessProbe:
        {{- include "confighub.readinessProbe" . | nindent 8 }}
      livenessProbe:
        {{- include "confighub.livenessProbe" . | nindent 8 }}
      {{- with .Values.resources }}
      resources:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.containerSecurityContext }}
      securityContext:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      volumeMounts:
        - name: auth-tokens
          mountPath: /etc/confighub-auth
          readOnly: true
        {{- if eq .Values.mode "single-node" }}
        - name: data
          mountPath: /data
        {{- end }}
        {{- if include "confighub.hasSinks" . }}
        - name: sinks
          mountPath: /etc/confighub
          readOnly: true
        {{- end }}
        {{- if .Values.tls.enabled }}
        - name: tls
          mountPath: /etc/confighub-tls
          readOnly: true
        {{- if .Values.tls.clientCASecretName }}
        - name: client-ca
          mountPath: /etc/confighub-client-ca
          readOnly: true
        {{- end }}
        {{- end }}
        {{- if and (eq .Values.mode "replicated") .Values.etcd.tls.secretName }}
        - name: etcd-tls
          mountPath: /etc/confighub-etcd-tls
          readOnly: true
        {{- end }}
        {{- if .Values.cluster.enabled }}
        - name: cluster-cert
          mountPath: /etc/confighub-cluster
          readOnly: true
        {{- if eq .Values.cluster.mtls "pki" }}
        - name: cluster-ca
          mountPath: /etc/confighub-cluster-ca
          readOnly: true
        {{- end }}
        {{- end }}
        {{- range .Values.secretVolumes }}
        - name: {{ . }}
          mountPath: /etc/secrets/{{ . }}
          readOnly: true
        {{- end }}
  volumes:
    - name: auth-tokens
      secret:
        secretName: {{ include "confighub.authSecretName" . }}
        defaultMode: 0440
    {{- if include "confighub.hasSinks" . }}
    - name: sinks
      configMap:
        name: {{ include "confighub.sinksConfigMapName" . }}
    {{- end }}
    {{- if .Values.tls.enabled }}
    - name: tls
      secret:
        secretName: {{ .Values.tls.secretName }}
        defaultMode: 0440
    {{- with .Values.tls.clientCASecretName }}
    - name: client-ca
      secret:
        secretName: {{ . }}
    {{- end }}
    {{- end }}
    {{- if and (eq .Values.mode "replicated") .Values.etcd.tls.secretName }}
    - name: etcd-tls
      secret:
        secretName: {{ .Values.etcd.tls.secretName }}
        defaultMode: 0440
    {{- end }}
    {{- if .Values.cluster.enabled }}
    - name: cluster-cert
      secret:
        secretName: {{ .Values.cluster.certSecretName }}
        defaultMode: 0440
    {{- if eq .Values.cluster.mtls "pki" }}
    - name: cluster-ca
      secret:
        secretName: {{ .Values.clusterCaSecretName }}
    {{- end }}
    {{- end }}
    {{- range .Values.secretVolumes }}
    - name: {{ . }}
      secret:
        secretName: {{ . }}
    {{- end }}
{{- end -}}
