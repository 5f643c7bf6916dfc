/** The default VitePress theme with the site's few styles (style.css). */
import DefaultTheme from 'vitepress/theme';
import './style.css';

export default DefaultTheme;
