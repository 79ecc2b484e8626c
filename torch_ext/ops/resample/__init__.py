"""Resampling: interpolation (nearest, linear, bicubic, antialiased), padding, grid sampling."""
