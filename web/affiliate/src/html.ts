import htm from 'htm'
import { h } from 'preact'

/** Views are tagged templates (htm) rendered by Preact: no build-time JSX, no hand-built DOM. */
export const html = htm.bind(h)
