{{/*
Names are fixed, not derived from the release: the operator is a cluster singleton (one
GPUClusterPolicy, one leader Lease), and its component RBAC refers to these names.
*/}}
{{- define "gpuop.name" -}}gpuop-operator{{- end }}

{{/* Labels on every object the chart renders. */}}
{{- define "gpuop.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{ include "gpuop.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: gpuop
app.kubernetes.io/component: operator
{{- end }}

{{/* What the Deployment selects its pods by (immutable once installed). */}}
{{- define "gpuop.selectorLabels" -}}
app.kubernetes.io/name: gpuop
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The image reference: repository:tag, the tag defaulting to the chart's appVersion. */}}
{{- define "gpuop.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/*
The host of the operator's HTTP probes: with hostNetwork the pod's IP is the node's, and the
kubelet (on the same host) probes loopback instead of the node's address. Empty otherwise.
*/}}
{{- define "gpuop.probeHost" -}}
{{- if .Values.hostNetwork }}host: 127.0.0.1{{ end }}
{{- end }}
