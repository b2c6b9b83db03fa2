"""Other programs' file formats, read and written without touching kioku's stores."""
