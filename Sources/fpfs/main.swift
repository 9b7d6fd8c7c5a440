print("fpfs")
