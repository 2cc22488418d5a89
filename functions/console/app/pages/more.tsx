import { ListOf, when } from '../ui';

export function McpAndFiles() {
  return (
    <div>
      <h2>MCP servers</h2>
      <ListOf
        path="/mcp-servers?limit=100"
        caption="MCP servers"
        columns={[
          { label: 'Slug', value: (s) => s.slug },
          { label: 'Name', value: (s) => s.name ?? '' },
          { label: 'URL', value: (s) => s.url ?? '' },
          { label: 'Created', value: (s) => when(s.created_at) },
        ]}
      />
      <h2>Files</h2>
      <ListOf
        path="/files?limit=100"
        caption="Files"
        columns={[
          { label: 'File', value: (f) => f.id },
          { label: 'Name', value: (f) => f.filename },
          { label: 'Purpose', value: (f) => f.purpose },
          { label: 'Bytes', value: (f) => f.bytes },
          { label: 'Created', value: (f) => when(f.created_at) },
        ]}
      />
    </div>
  );
}
