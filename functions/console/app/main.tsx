import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { currentSession, type Session, signInWithKey, signOut, ssoConfig, ssoLoginUrl, type SsoConfig, whenSignedOut } from './api';
import { ErrorNote, Field, useAction } from './ui';
import { Overview } from './pages/overview';
import { Logs } from './pages/logs';
import { Keys } from './pages/keys';
import { Providers } from './pages/providers';
import { Configs } from './pages/configs';
import { Guardrails } from './pages/guardrails';
import { Policies } from './pages/policies';
import { Prompts } from './pages/prompts';
import { Assistants } from './pages/assistants';
import { FineTuning } from './pages/fine-tuning';
import { McpAndFiles } from './pages/more';
import './style.css';

const PAGES = [
  { id: 'overview', title: 'Overview', page: Overview },
  { id: 'logs', title: 'Request logs', page: Logs },
  { id: 'keys', title: 'API keys', page: Keys },
  { id: 'providers', title: 'Providers', page: Providers },
  { id: 'configs', title: 'Configs', page: Configs },
  { id: 'guardrails', title: 'Guardrails', page: Guardrails },
  { id: 'policies', title: 'Rate limits and budgets', page: Policies },
  { id: 'prompts', title: 'Prompts', page: Prompts },
  { id: 'assistants', title: 'Assistants', page: Assistants },
  { id: 'fine-tuning', title: 'Fine-tuning', page: FineTuning },
  { id: 'more', title: 'MCP servers and files', page: McpAndFiles },
] as const;

/** Pages are addressed by the URL's fragment (`#/logs`), so the server serves one document. */
const pageFromHash = () => PAGES.find((p) => `#/${p.id}` === location.hash) ?? PAGES[0];

function SignIn({ onSignedIn }: { onSignedIn: (session: Session) => void }) {
  const [key, setKey] = useState('');
  const [sso, setSso] = useState<SsoConfig>({ enabled: false });
  const action = useAction();
  useEffect(() => void ssoConfig().then(setSso), []);
  return (
    <main class="signin" id="main">
      <h1>AI gateway console</h1>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void action.run(async () => onSignedIn(await signInWithKey(key.trim())));
        }}
      >
        <h2>Sign in with an API key</h2>
        <Field label="API key" hint="Any key of the gateway; the console acts with its role.">
          <input type="password" name="api_key" autoComplete="off" required value={key} onInput={(e) => setKey(e.currentTarget.value)} />
        </Field>
        <button type="submit" disabled={action.busy}>
          Sign in
        </button>
        <ErrorNote error={action.error} />
      </form>
      {sso.enabled ? (
        <section>
          <h2>Single sign-on</h2>
          <a class="button" href={ssoLoginUrl()}>
            Sign in with {sso.label ?? sso.issuer ?? 'single sign-on'}
          </a>
        </section>
      ) : null}
    </main>
  );
}

function App() {
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const [page, setPage] = useState(pageFromHash());
  useEffect(() => {
    whenSignedOut(() => setSession(null));
    void currentSession().then(setSession);
    const onHash = () => setPage(pageFromHash());
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);
  useEffect(() => {
    document.title = `${page.title} · AI gateway console`;
  }, [page]);
  if (session === undefined) return <p aria-busy="true">Loading…</p>;
  if (session === null) return <SignIn onSignedIn={setSession} />;
  const Page = page.page;
  return (
    <div class="layout">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header>
        <span class="brand">AI gateway</span>
        <span class="who">
          {session.subject ?? 'API key'}
          {session.role ? ` · ${session.role}` : ''}
          {session.workspace_id ? ` · ${session.workspace_id}` : ''}
        </span>
        <button type="button" onClick={() => void signOut().then(() => setSession(null))}>
          Sign out
        </button>
      </header>
      <nav aria-label="Pages">
        <ul>
          {PAGES.map((p) => (
            <li key={p.id}>
              <a href={`#/${p.id}`} aria-current={p.id === page.id ? 'page' : undefined}>
                {p.title}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main">
        <h1>{page.title}</h1>
        <Page />
      </main>
    </div>
  );
}

render(<App />, document.getElementById('app')!);
