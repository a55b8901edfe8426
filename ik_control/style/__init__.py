"""Style-preserving motion (Gielniak, Liu & Thomaz): TSFKS, velocity modulation, sn metric."""
