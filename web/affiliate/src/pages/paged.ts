import { useEffect, useState } from 'preact/hooks'
import { api, type Page } from '../api'

/**
 * A list read page by page by cursor: the rows so far, the next cursor, and `more()` to read it. A new
 * `url` (another filter) starts again from the first page.
 */
export function usePages<T>(url: (cursor?: string) => string) {
  const first = url()
  const [rows, setRows] = useState<T[]>([])
  const [next, setNext] = useState<string | null>(null)
  const [loading, setLoading] = useState(true)
  const [error, setError] = useState('')
  const load = async (cursor?: string) => {
    setLoading(true)
    try {
      const page = await api<Page<T>>(url(cursor))
      setRows((r) => (cursor ? [...r, ...page.rows] : page.rows))
      setNext(page.next_cursor)
    } catch (e) {
      setError((e as Error).message)
    } finally {
      setLoading(false)
    }
  }
  useEffect(() => {
    setRows([])
    void load()
  }, [first])
  return { rows, next, loading, error, more: () => next && load(next) }
}
