import { useState } from 'preact/hooks'
import { api, type Me } from '../api'
import { html } from '../html'

export function Login({ onIn }: { onIn: (me: Me) => void }) {
  const [error, setError] = useState('')
  const [busy, setBusy] = useState(false)
  const submit = async (e: SubmitEvent) => {
    e.preventDefault()
    const form = new FormData(e.target as HTMLFormElement)
    setBusy(true)
    setError('')
    try {
      const r = await api<{ me: Me }>('/api/affiliate/login', {
        method: 'POST',
        body: { login: form.get('login'), password: form.get('password') },
      })
      onIn(r.me)
    } catch (err) {
      setError((err as Error).message)
    } finally {
      setBusy(false)
    }
  }
  return html`<main class="login">
    <h1>Partner sign-in</h1>
    <form onSubmit=${submit} aria-describedby="login-error">
      <label>Email or affiliate code<input name="login" autocomplete="username" required maxlength="254" /></label>
      <label>Password<input name="password" type="password" autocomplete="current-password" required minlength="6" maxlength="64" /></label>
      <button type="submit" disabled=${busy}>${busy ? 'Signing in…' : 'Sign in'}</button>
      <p id="login-error" class="error" role="alert">${error}</p>
    </form>
  </main>`
}
