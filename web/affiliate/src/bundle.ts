import 'uplot/dist/uPlot.min.css'
import './styles.css'
import { render } from 'preact'
import { App } from './app'
import { html } from './html'
import { interceptLinks } from './router'

document.addEventListener('click', interceptLinks)
render(html`<${App} />`, document.getElementById('app')!)
